package dev.phrony.worker.work;

import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkHandlerAdvertisement;
import dev.phrony.runtime.v1.WorkHeartbeat;
import dev.phrony.runtime.v1.WorkInFlightCall;
import dev.phrony.runtime.v1.WorkRegister;
import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.runtime.v1.WorkToolError;
import dev.phrony.runtime.v1.WorkToolNack;
import dev.phrony.runtime.v1.WorkToolResult;
import dev.phrony.worker.Count;
import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.ops.ReconnectReason;
import dev.phrony.worker.ops.StreamKill;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.outbox.HeldResult;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.time.Scheduler;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Work stream, from {@code register} to its end; it only speaks the wire. Inbound messages
 * arrive on the channel's I/O thread and go, a few per task ({@link InboundSlices}), to the {@link
 * Dispatcher}, which owns every call; outbound messages go through the one {@link StreamWriter}.
 * Never outlives its stream: the {@link WorkClient} makes a new session per connection.
 */
final class WorkSession implements CallSink, ClientResponseObserver<Outbound, Inbound> {
  private static final Logger log = LoggerFactory.getLogger(WorkSession.class);

  /** Inbound messages requested at a time (one at a time caps a stream near 15k msgs/s). */
  static final int INBOUND_BATCH = 256;

  private static final Outbound HEARTBEAT =
      new Outbound.Proto(
          WorkClientMsg.newBuilder().setHeartbeat(WorkHeartbeat.getDefaultInstance()).build());

  /** How long a stream we end is given to close from the runtime's side before it is cut. */
  static final Duration CLOSE_GRACE = Duration.ofSeconds(2);

  /**
   * How a stream ended: the status, why in words and as a class, how far it got, and, for an end
   * the runtime chose with an error status (it keeps the registration), why; else null.
   */
  record End(
      Status status,
      String reason,
      ReconnectReason cause,
      boolean registered,
      boolean healthy,
      StreamKill kill) {}

  private final long id;
  private final HandlerSet handlers;
  private final Dispatcher dispatcher;
  private final WorkerIdentity identity;
  private volatile Set<String> advertised = Set.of();
  private final Heartbeat heartbeat;
  private final Scheduler scheduler;
  private final WorkerMetrics metrics;
  private final Executor writes;
  private final InboundSlices inbound;
  private final WireTimings timings;
  private final StreamCancels cancels = new StreamCancels();
  private final CompletableFuture<End> ended = new CompletableFuture<>();
  private final CompletableFuture<Void> registration = new CompletableFuture<>();
  private final CompletableFuture<Void> handedOver = new CompletableFuture<>();
  private volatile String handOverVia;

  private volatile ClientCallStreamObserver<Outbound> requests;
  private volatile StreamWriter writer;
  private volatile boolean registered;
  private volatile boolean healthy;
  private volatile boolean leaving;
  private volatile String abortReason;
  private volatile ReconnectReason abortCause;
  private volatile Scheduler.Handle closeTimer = Scheduler.NONE;
  private volatile StreamKill kill;
  private volatile Killed onKill;
  private int receivedSinceRequest;

  /**
   * The calls invoked on this stream that no ack or cancel read, or nack sent, has taken off it.
   * Concurrent: gRPC's callbacks run on the I/O thread, but a stream started before its transport
   * was ready is first delivered by the thread that connected it, while nacks go from the context.
   */
  private final Set<String> read = ConcurrentHashMap.newKeySet();

  /** True once the runtime's answer to this stream's own register was read (gRPC's callbacks). */
  private boolean ownRegisteredRead;

  /**
   * @param writes where the stream's writes are drained (the channel's I/O thread)
   * @param loop the channel's I/O thread as a queue of tasks, where inbound slices run
   */
  WorkSession(
      long id,
      HandlerSet handlers,
      Dispatcher dispatcher,
      WorkerIdentity identity,
      Scheduler scheduler,
      WorkerMetrics metrics,
      Executor writes,
      Executor loop) {
    this.id = id;
    this.writes = writes;
    this.inbound = new InboundSlices(loop);
    this.timings = dispatcher.timings();
    this.handlers = handlers;
    this.dispatcher = dispatcher;
    this.identity = identity;
    this.scheduler = scheduler;
    this.heartbeat =
        new Heartbeat(
            scheduler,
            () -> {
              dispatcher.reportStalledStart(); // a stalled I/O thread would not send this beat
              writer.send(HEARTBEAT);
            },
            () ->
                abort(
                    ReconnectReason.HEARTBEAT_TIMEOUT,
                    "no heartbeat_ack (or registered) for a"
                        + " whole lease TTL of "
                        + heartbeat().ttl().toMillis()
                        + " ms"),
            dispatcher::holdsRouting);
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

  /** Completes when the runtime answers the hand-over register that preceded this stream's own. */
  CompletableFuture<Void> handedOver() {
    return handedOver;
  }

  boolean registered() {
    return registered && live();
  }

  Heartbeat heartbeat() {
    return heartbeat;
  }

  /**
   * Told, on the gRPC callback that reads the end, that the runtime killed this registered stream
   * (it keeps a dead entry): {@code calls} may still be tracked on it (invoked here, no ack or
   * cancel read since, not the one it named). Runs ahead of the earlier messages and {@link
   * #ended}.
   */
  interface Killed {
    void killed(WorkSession s, Status status, Set<String> calls);
  }

  /** Sets who is told of a kill as soon as it is read (see {@link Killed}). */
  void onKill(Killed listener) {
    onKill = listener;
  }

  /** Why the runtime ended this stream while keeping its registration, or null. */
  StreamKill kill() {
    return kill;
  }

  /** The calls its register lists in {@code in_flight}. */
  Set<String> advertised() {
    return advertised;
  }

  @Override
  public void beforeStart(ClientCallStreamObserver<Outbound> requestStream) {
    this.requests = requestStream;
    this.writer = new StreamWriter(requestStream, writes, timings, cancels);
    requestStream.disableAutoRequestWithInitial(INBOUND_BATCH);
    requestStream.setOnReadyHandler(() -> writer.drain());
  }

  /**
   * A register this stream sends before its own: a registration under {@code via}, with no
   * handlers, whose {@code in_flight} moves {@code calls} off a killed stream's dead entry (see
   * {@link Registrations}). The runtime reads one stream's messages in order, so the calls are off
   * that entry before this stream's own register replaces it, with no round trip between the two.
   */
  record HandOver(WorkerIdentity via, Set<String> calls) {}

  /**
   * Sends {@code register} with every handler and {@code inFlight}, the calls still in flight that
   * this registration is to answer (rules 2, 3, 9), after {@code first}'s register if not null, and
   * starts the watchdog: {@code registered} must come within a default TTL. Called once, in the
   * dispatcher's context.
   */
  void register(Set<String> inFlight, HandOver first) {
    if (first != null) {
      handOverVia = first.via().workerId();
      writer.sendUnpaced(registerMessage(first.via(), List.of(), first.calls()));
    }
    advertised = Set.copyOf(inFlight);
    writer.sendUnpaced(registerMessage(identity, handlers.catalog().entries(), advertised));
    heartbeat.start();
    log.debug(
        "stream {}: register sent with {} handlers and {} in flight{}",
        id,
        handlers.catalog().size(),
        advertised.size(),
        first == null
            ? ""
            : ", after one as " + first.via().workerId() + " taking over " + first.calls().size());
  }

  private static Outbound registerMessage(
      WorkerIdentity as, List<HandlerCatalog.Entry> handlers, Set<String> inFlight) {
    WorkRegister.Builder reg =
        WorkRegister.newBuilder()
            .setWorkerId(as.workerId())
            .setWorkloadIdentity(as.workloadIdentity())
            .setImageDigest(as.imageDigest());
    for (HandlerCatalog.Entry e : handlers) {
      reg.addHandlers(
          WorkHandlerAdvertisement.newBuilder()
              .setTool(e.descriptor().tool())
              .setVersion(e.descriptor().version())
              .setContractVersion(e.descriptor().contractVersion())
              .setMaxConcurrency(Dispatcher.slotsOf(e))
              .setDescriptorHash(e.descriptorHash()));
    }
    inFlight.forEach(c -> reg.addInFlight(WorkInFlightCall.newBuilder().setCallId(c)));
    return new Outbound.Proto(WorkClientMsg.newBuilder().setRegister(reg).build());
  }

  /** True once the stream is open: what is sent on it goes after its register. */
  @Override
  public boolean open() {
    return writer != null;
  }

  /**
   * As gRPC delivers a message, in the socket read that brought its bytes. A cancel takes effect
   * here, before it waits anywhere: from this moment the writer drops any answer for its call
   * ({@link StreamCancels}); the owner's transition follows in order with the other messages.
   */
  @Override
  public void onNext(Inbound msg) {
    switch (msg) {
      case Inbound.Invoke i -> read.add(i.callId());
      case Inbound.ResultAck a -> read.remove(a.callId());
      case Inbound.Other o -> {
        if (o.msg().hasCancel()) {
          read.remove(o.msg().getCancel().getCallId());
        } else if (o.msg().hasRegistered()
            && o.msg().getRegistered().getWorkerId().equals(identity.workerId())) {
          ownRegisteredRead = true;
        }
      }
    }
    if (msg instanceof Inbound.Other o && o.msg().hasCancel()) {
      cancels.read(o.msg().getCancel().getCallId());
      long readAt = timings.lastReadNanos();
      inbound.add(
          () -> {
            timings.record(
                WireTimings.Interval.CANCEL_READ_TO_ON_CANCEL, System.nanoTime() - readAt);
            handle(msg);
          });
    } else {
      inbound.add(() -> handle(msg));
    }
    // Flow control by what is received, not handled: credit never runs out while messages wait
    // in the slices, so a cancel's bytes are always delivered (above) as soon as they are read.
    // What waits is bounded by the protocol: invokes by the advertised slots, acks by results.
    if (++receivedSinceRequest >= INBOUND_BATCH / 2) {
      receivedSinceRequest = 0;
      requests.request(INBOUND_BATCH / 2);
    }
  }

  private void handle(Inbound msg) {
    try {
      switch (msg) {
        case Inbound.Invoke invoke -> dispatcher.onInvoke(invoke, this);
        case Inbound.ResultAck ack -> dispatcher.onResultAck(ack.callId());
        case Inbound.Other other -> onOther(other.msg());
      }
    } catch (RuntimeException e) {
      // As gRPC does with an observer that throws: the stream ends, the reconnect takes over.
      log.error("stream {}: inbound message failed, ending the stream", id, e);
      cut(ReconnectReason.ERROR, "inbound message failed: " + e);
    }
  }

  private void onOther(WorkServerMsg msg) {
    switch (msg.getBodyCase()) {
      case REGISTERED -> {
        if (handOverVia != null && !handedOver.isDone()) {
          // The answer to the hand-over register, which came first: not this stream's own.
          handedOver.complete(null);
          log.debug("stream {}: calls taken over as {}", id, msg.getRegistered().getWorkerId());
          return;
        }
        heartbeat.onRegistered(msg.getRegistered().getLeaseTtlMs());
        registered = true;
        registration.complete(null); // the registrations take it from here, in order
        log.info(
            "registered as {}: {}, lease TTL {} ms",
            identity.workerId(),
            Count.of(handlers.catalog().size(), "handler"),
            heartbeat.ttl().toMillis());
      }
      case INVOKE, RESULT_ACK -> {} // Inbound reads these as records: they never come as Other
      case CANCEL -> dispatcher.onCancel(msg.getCancel().getCallId(), this);
      case HEARTBEAT_ACK -> {
        heartbeat.onAck();
        healthy = true;
        metrics.heartbeatRoundTrip(heartbeat.lastRoundTrip());
      }
      case BODY_NOT_SET -> log.warn("stream {}: empty message from the runtime ignored", id);
    }
  }

  /**
   * A kill is told to {@link #onKill} at once: every call routed to the dead entry until it is
   * replaced fails. The end itself is taken in after the earlier messages, in order.
   */
  @Override
  public void onError(Throwable t) {
    Status status = Status.fromThrowable(t);
    Killed listener = onKill;
    if (ownRegisteredRead && keepsRegistration(status)) {
      if (listener != null) {
        Set<String> calls = new LinkedHashSet<>(read);
        OrphanPolicy.unknownCallId(status.getDescription()).ifPresent(calls::remove);
        listener.killed(this, status, calls);
      }
      kill = killOf(status); // logs: after the replacement is on its way
    }
    inbound.add(() -> failed(t)); // after the messages that came before it
  }

  private void failed(Throwable t) {
    Status status = Status.fromThrowable(t);
    String reason = abortReason != null ? abortReason : failure(status);
    end(status, reason, abortCause != null ? abortCause : causeOf(status));
  }

  @Override
  public void onCompleted() {
    inbound.add(this::completed); // after the messages that came before it
  }

  private void completed() {
    end(
        Status.OK,
        abortReason != null ? abortReason : "runtime closed the stream",
        abortCause != null ? abortCause : ReconnectReason.RUNTIME_CLOSED);
  }

  /**
   * The runtime ended the stream for an answer to a call it no longer knew: says whether that
   * answer was written before the worker read a cancel for it (they crossed on the wire, which no
   * worker can prevent: the runtime forgets a call before it sends the cancel), and counts it.
   */
  private StreamKill explainUnknownCall(String callId) {
    StreamCancels.Crossing c = cancels.crossing(callId);
    timings.unknownCall(c.crossed());
    if (c.writtenNanos() != null && c.cancelReadNanos() != null) {
      log.warn(
          "stream {}: the runtime did not know call {}: its answer was written {} us {} its"
              + " cancel was read{}",
          id,
          callId,
          Math.abs(c.cancelReadNanos() - c.writtenNanos()) / 1_000,
          c.crossed() ? "before" : "after",
          c.crossed() ? " (they crossed on the wire)" : " (a bug: please report it)");
    } else {
      log.warn(
          "stream {}: the runtime did not know call {} ({}; no cancel for it was read)",
          id,
          callId,
          c.writtenNanos() == null ? "no answer of ours is known" : "its answer was sent");
    }
    return c.writtenNanos() == null
        ? StreamKill.OTHER
        : c.crossed() ? StreamKill.CROSSED : StreamKill.AFTER_READ;
  }

  /** How a stream that failed with {@code status} ended, in words. */
  static String failure(Status status) {
    return "stream failed: "
        + status.getCode()
        + (status.getDescription() == null ? "" : " " + status.getDescription());
  }

  private StreamKill killOf(Status status) {
    return OrphanPolicy.unknownCallId(status.getDescription())
        .map(this::explainUnknownCall)
        .orElse(StreamKill.OTHER);
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
    heartbeat.stop();
    closeTimer.cancel();
    if (writer != null) {
      writer.closed();
    }
    // Even on a stream we were closing: a refusal the runtime read before our half-close ends the
    // stream without unregistering it, so the entry is left dead all the same.
    if (kill == null && keepsRegistration(status)) {
      kill = killOf(status);
    }
    // The registrations take in the end (detach or hand over the stream's calls) in the
    // dispatcher's context, before anything posted later there (the next register) runs.
    ended.complete(new End(status, reason, cause, registered, healthy, kill));
  }

  /**
   * True for a status the runtime's own handler ends a stream with when it refuses a message
   * (NOT_FOUND for an unknown call or worker, INVALID_ARGUMENT, FAILED_PRECONDITION): it returns
   * without unregistering, so the registration stays as a dead entry. A transport's end (the
   * connection lost, a cancel, a clean close) removes it.
   */
  static boolean keepsRegistration(Status status) {
    String d = status.getDescription();
    return switch (status.getCode()) {
      // A heartbeat's "unknown worker": the runtime has no registration of ours left at all.
      case NOT_FOUND -> d == null || !d.startsWith("unknown worker");
      case INVALID_ARGUMENT, FAILED_PRECONDITION -> true;
      default -> false;
    };
  }

  /** The stream could not even be started: it ends at once, with {@code e}. */
  void couldNotOpen(RuntimeException e) {
    end(Status.fromThrowable(e), e.toString(), ReconnectReason.ERROR);
  }

  /**
   * Ends the stream from our side, so that the runtime has dropped our registration before we open
   * the next one (rule 2: a registration made while the runtime still holds the old stream is
   * removed with it). The stream is half-closed and the runtime closes it once it has unregistered
   * us; one that has not closed within {@link #CLOSE_GRACE} (a runtime that does not answer) is
   * cut. {@link #ended()} completes either way.
   */
  void abort(ReconnectReason cause, String reason) {
    abortCause = cause;
    abortReason = reason;
    if (!live()) {
      return;
    }
    writer.complete();
    Scheduler.Handle timer = scheduler.schedule(() -> cut(cause, reason), CLOSE_GRACE);
    closeTimer = timer;
    if (!live()) {
      timer.cancel();
    }
  }

  /**
   * Ends the stream from our side at once: gRPC cancels it (stopping, a connection going away, a
   * runtime that did not close it in time).
   */
  void cut(ReconnectReason cause, String reason) {
    if (abortReason == null) {
      abortCause = cause;
      abortReason = reason;
    }
    ClientCallStreamObserver<Outbound> r = requests; // null: a stop came while it opens
    if (live() && r != null) {
      r.cancel(reason, null);
    }
  }

  /** Half-closes cleanly after what is queued (graceful shutdown). */
  void halfClose() {
    writer.complete();
  }

  /**
   * Takes this registration out of routing without closing it: no more heartbeats, so the runtime
   * skips it once its lease lapses ({@link #leaseLapses}), while it still takes the results of the
   * calls it sent here (protocol.md part 2, "Registration and lease").
   */
  void leaveRouting() {
    heartbeat.stop();
    leaving = true;
  }

  /** When the runtime's lease of this registration has surely lapsed, if heartbeats stopped. */
  Instant leaseLapses() {
    return heartbeat.leaseLapses();
  }

  /** True once {@link #leaveRouting} was called. */
  boolean leaving() {
    return leaving;
  }

  WorkerIdentity identity() {
    return identity;
  }

  /** True while registered and the lease was renewed (or granted) within a TTL. */
  boolean leaseFresh() {
    return registered() && heartbeat.fresh();
  }

  // ---- CallSink ----

  @Override
  public HandlerSet handlers() {
    return handlers;
  }

  @Override
  public boolean live() {
    return !ended.isDone();
  }

  @Override
  public boolean sendResult(HeldResult result) {
    return writer.send(
        switch (result.outcome()) {
          // No copy: a held payload is never modified (the outbox keeps this same array).
          case CallOutcome.Payload p -> new Outbound.Result(result.callId(), p.bytes());
          case CallOutcome.Error e ->
              new Outbound.Proto(
                  WorkClientMsg.newBuilder()
                      .setResult(
                          WorkToolResult.newBuilder()
                              .setCallId(result.callId())
                              .setError(
                                  WorkToolError.newBuilder()
                                      .setCode(e.code())
                                      .setMessage(e.message())))
                      .build());
        });
  }

  @Override
  public void sendNack(String callId, String code, String message) {
    read.remove(callId); // the runtime forgets a call once it has its nack
    writer.send(
        new Outbound.Proto(
            WorkClientMsg.newBuilder()
                .setNack(
                    WorkToolNack.newBuilder().setCallId(callId).setCode(code).setMessage(message))
                .build()));
  }

  @Override
  public boolean unsend(String callId) {
    return writer.unsend(callId);
  }

  @Override
  public void cancelTaken(String callId) {
    cancels.taken(callId);
  }

  @Override
  public String toString() {
    return "stream " + id;
  }
}
