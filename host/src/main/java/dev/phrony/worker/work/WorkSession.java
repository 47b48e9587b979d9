package dev.phrony.worker.work;

import com.google.protobuf.UnsafeByteOperations;
import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkHandlerAdvertisement;
import dev.phrony.runtime.v1.WorkHeartbeat;
import dev.phrony.runtime.v1.WorkInFlightCall;
import dev.phrony.runtime.v1.WorkRegister;
import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.runtime.v1.WorkToolError;
import dev.phrony.runtime.v1.WorkToolNack;
import dev.phrony.runtime.v1.WorkToolResult;
import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.outbox.HeldResult;
import dev.phrony.worker.ops.ReconnectReason;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.outbox.ResultOutbox;
import dev.phrony.worker.plugin.HandlerCatalog;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Work stream, from {@code register} to its end. Never outlives its stream: the
 * {@link WorkClient} makes a new session per connection. Inbound messages arrive serialized on
 * the channel's I/O thread, so {@link #onNext} must never block; handler threads only reach the
 * stream through {@link CallSink} and the single {@link StreamWriter}.
 */
final class WorkSession implements CallSink, ClientResponseObserver<WorkClientMsg, WorkServerMsg> {
  private static final Logger log = LoggerFactory.getLogger(WorkSession.class);

  /** Inbound messages requested at a time (one at a time caps a stream near 15k msgs/s). */
  static final int INBOUND_BATCH = 256;

  /** How a stream ended: the status, why in words and as a class, and how far it got. */
  record End(Status status, String reason, ReconnectReason cause, boolean registered,
      boolean healthy) {}

  private final long id;
  private final HandlerCatalog catalog;
  private final Dispatcher dispatcher;
  private final ResultOutbox outbox;
  private final WorkerIdentity identity;
  private final InstantSource clock;
  private final Set<String> advertised;
  private final Heartbeat heartbeat;
  private final WorkerMetrics metrics;
  private final Executor writes;
  private final CompletableFuture<End> ended = new CompletableFuture<>();
  private final CompletableFuture<Void> registration = new CompletableFuture<>();
  /** Results sent on this stream and not yet acked. */
  private final Set<String> unacked = ConcurrentHashMap.newKeySet();

  private volatile ClientCallStreamObserver<WorkClientMsg> requests;
  private volatile StreamWriter writer;
  private volatile Instant registeredAt;
  private volatile boolean healthy;
  private volatile boolean orphanWindowClosed;
  private volatile String abortReason;
  private volatile ReconnectReason abortCause;
  private int receivedSinceRequest;

  WorkSession(long id, HandlerCatalog catalog, Dispatcher dispatcher, ResultOutbox outbox,
      WorkerIdentity identity, InstantSource clock, Set<String> inFlight, WorkerMetrics metrics,
      Executor writes) {
    this.id = id;
    this.writes = writes;
    this.catalog = catalog;
    this.dispatcher = dispatcher;
    this.outbox = outbox;
    this.identity = identity;
    this.clock = clock;
    this.advertised = Set.copyOf(inFlight);
    this.heartbeat = new Heartbeat(clock);
    this.metrics = metrics;
  }

  long id() {
    return id;
  }

  CompletableFuture<End> ended() {
    return ended;
  }

  /** Completes when the runtime answers {@code registered}. */
  CompletableFuture<Void> registration() {
    return registration;
  }

  boolean registered() {
    return registeredAt != null && live();
  }

  Heartbeat heartbeat() {
    return heartbeat;
  }

  @Override
  public void beforeStart(ClientCallStreamObserver<WorkClientMsg> requestStream) {
    this.requests = requestStream;
    this.writer = new StreamWriter(requestStream, writes);
    requestStream.disableAutoRequestWithInitial(INBOUND_BATCH);
    requestStream.setOnReadyHandler(() -> writer.drain());
  }

  /** Sends {@code register} with every handler and the calls still in flight (rule 2, 3). */
  void register() {
    WorkRegister.Builder reg = WorkRegister.newBuilder()
        .setWorkerId(identity.workerId())
        .setWorkloadIdentity(identity.workloadIdentity())
        .setImageDigest(identity.imageDigest());
    for (HandlerCatalog.Entry e : catalog.entries()) {
      reg.addHandlers(WorkHandlerAdvertisement.newBuilder()
          .setTool(e.descriptor().tool())
          .setVersion(e.descriptor().version())
          .setContractVersion(e.descriptor().contractVersion())
          .setMaxConcurrency(Dispatcher.slotsOf(e))
          .setDescriptorHash(e.descriptorHash()));
    }
    advertised.forEach(c -> reg.addInFlight(WorkInFlightCall.newBuilder().setCallId(c)));
    writer.send(WorkClientMsg.newBuilder().setRegister(reg).build());
    log.debug("stream {}: register sent with {} handlers and {} in flight", id,
        catalog.size(), advertised.size());
  }

  @Override
  public void onNext(WorkServerMsg msg) {
    switch (msg.getBodyCase()) {
      case REGISTERED -> {
        heartbeat.onRegistered(msg.getRegistered().getLeaseTtlMs());
        registeredAt = clock.instant();
        dispatcher.attachSession(this);
        registration.complete(null);
        log.info("registered as {}: {} handlers, lease TTL {} ms", identity.workerId(),
            catalog.size(), heartbeat.ttl().toMillis());
      }
      case INVOKE -> dispatcher.onInvoke(msg.getInvoke(), this);
      case CANCEL -> dispatcher.onCancel(msg.getCancel().getCallId(), this);
      case RESULT_ACK -> {
        String callId = msg.getResultAck().getCallId();
        unacked.remove(callId);
        dispatcher.onResultAck(callId);
      }
      case HEARTBEAT_ACK -> {
        heartbeat.onAck();
        healthy = true;
        metrics.heartbeatRoundTrip(heartbeat.lastRoundTrip());
      }
      case BODY_NOT_SET -> log.warn("stream {}: empty message from the runtime ignored", id);
    }
    // Batched flow control: ask for more once half a batch is consumed.
    if (++receivedSinceRequest >= INBOUND_BATCH / 2) {
      receivedSinceRequest = 0;
      requests.request(INBOUND_BATCH / 2);
    }
  }

  @Override
  public void onError(Throwable t) {
    Status status = Status.fromThrowable(t);
    String reason = abortReason != null ? abortReason
        : "stream failed: " + status.getCode()
            + (status.getDescription() == null ? "" : " " + status.getDescription());
    end(status, reason, abortCause != null ? abortCause : causeOf(status));
  }

  @Override
  public void onCompleted() {
    end(Status.OK, "runtime closed the stream", ReconnectReason.RUNTIME_CLOSED);
  }

  /** The class of an error status, for the reconnect counter. */
  static ReconnectReason causeOf(Status status) {
    return switch (status.getCode()) {
      case OK -> ReconnectReason.RUNTIME_CLOSED;
      case UNAVAILABLE -> ReconnectReason.UNAVAILABLE;
      case NOT_FOUND -> ReconnectReason.NOT_FOUND;
      case UNAUTHENTICATED, PERMISSION_DENIED -> ReconnectReason.UNAUTHENTICATED;
      default -> ReconnectReason.ERROR;
    };
  }

  private void end(Status status, String reason, ReconnectReason cause) {
    if (ended.isDone()) {
      return;
    }
    writer.closed();
    dispatcher.detach(this);
    if (status.getCode() == Status.Code.NOT_FOUND && status.getDescription() != null) {
      // Rule 9: the runtime did not know a call we answered; never send that result again.
      for (String callId : outbox.pendingIds()) {
        if (status.getDescription().contains(callId)) {
          outbox.markOrphaned(callId);
          log.warn("runtime did not know call {}; its result is kept as orphaned", callId);
        }
      }
    }
    ended.complete(new End(status, reason, cause, registeredAt != null, healthy));
  }

  /** Periodic work from the client's ticker: heartbeats, the watchdog and the orphan window. */
  void tick() {
    if (ended.isDone()) {
      return;
    }
    switch (heartbeat.tick()) {
      case SEND -> writer.send(WorkClientMsg.newBuilder()
          .setHeartbeat(WorkHeartbeat.getDefaultInstance()).build());
      case EXPIRED -> abort(ReconnectReason.HEARTBEAT_TIMEOUT, "no heartbeat_ack (or registered)"
          + " for a whole lease TTL of " + heartbeat.ttl().toMillis() + " ms");
      case NONE -> { }
    }
    Instant reg = registeredAt;
    if (reg != null && !orphanWindowClosed
        && !clock.instant().isBefore(reg.plus(heartbeat.ttl()))) {
      closeOrphanWindow();
    }
  }

  /** Results advertised at register that the runtime neither acked nor re-invoked in a TTL. */
  private void closeOrphanWindow() {
    int n = 0;
    for (String callId : advertised) {
      if (!unacked.contains(callId) && outbox.find(callId).isPresent()
          && !outbox.isOrphaned(callId)) {
        outbox.markOrphaned(callId);
        n++;
      }
    }
    orphanWindowClosed = true;
    if (n > 0) {
      log.warn("{} results from earlier streams were not acked within a lease TTL; kept as"
          + " orphaned (their outcome is indeterminate to the runtime)", n);
    }
  }

  /** Ends the stream from our side; {@link #ended()} completes once gRPC has closed it. */
  void abort(ReconnectReason cause, String reason) {
    abortCause = cause;
    abortReason = reason;
    requests.cancel(reason, null);
  }

  /** Half-closes cleanly after what is queued (graceful shutdown). */
  void halfClose() {
    writer.complete();
  }

  /** True when no result sent here is waiting for its ack. */
  boolean allAcked() {
    return unacked.isEmpty();
  }

  Duration lastHeartbeatRoundTrip() {
    return heartbeat.lastRoundTrip();
  }

  /** True while registered and the lease was renewed (or granted) within a TTL. */
  boolean leaseFresh() {
    return registered() && heartbeat.fresh();
  }

  // ---- CallSink ----

  @Override
  public boolean live() {
    return !ended.isDone();
  }

  @Override
  public void sendResult(HeldResult result) {
    WorkToolResult.Builder r = WorkToolResult.newBuilder().setCallId(result.callId());
    switch (result.outcome()) {
      // No copy: a held payload is never modified (the outbox keeps this same array).
      case CallOutcome.Payload p -> r.setPayload(UnsafeByteOperations.unsafeWrap(p.bytes()));
      case CallOutcome.Error e -> r.setError(
          WorkToolError.newBuilder().setCode(e.code()).setMessage(e.message()));
    }
    unacked.add(result.callId());
    if (!writer.send(WorkClientMsg.newBuilder().setResult(r).build())) {
      unacked.remove(result.callId());
    }
  }

  @Override
  public void sendNack(String callId, String code, String message) {
    writer.send(WorkClientMsg.newBuilder().setNack(WorkToolNack.newBuilder()
        .setCallId(callId).setCode(code).setMessage(message)).build());
  }

  @Override
  public void unsend(String callId) {
    if (writer.unsend(callId)) {
      unacked.remove(callId);
    }
  }

  @Override
  public boolean orphanWindowClosed() {
    return orphanWindowClosed;
  }

  @Override
  public String toString() {
    return "stream " + id;
  }
}
