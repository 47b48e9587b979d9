package dev.phrony.worker.testkit;

import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkRegister;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The inbound side of one Work stream: the runtime's {@code ServeWork} loop.
 *
 * <p>gRPC delivers this observer's callbacks one at a time, so its state needs no lock. Once the
 * stream has ended (by the runtime, the client or the transport) later callbacks are ignored, as
 * nothing runs after the Go handler returns. Only a clean end or a transport failure unregisters
 * the worker id; a stream the runtime ends with an error status leaves its registration behind.
 */
final class WorkStream implements StreamObserver<WorkClientMsg> {

  private static final Logger log = LoggerFactory.getLogger(LocalRuntime.class);
  private static final Logger wire = LoggerFactory.getLogger(WorkerStream.class);

  private final Registry registry;
  private final WorkerStream out;
  private final EventLog events;
  private final long leaseTtlMs;
  private final int maxMessageSize;

  /** The worker id of the last {@code register} on this stream, null before. */
  private String workerId;

  private boolean ended;

  WorkStream(
      Registry registry, WorkerStream out, EventLog events, long leaseTtlMs, int maxMessageSize) {
    this.registry = registry;
    this.out = out;
    this.events = events;
    this.leaseTtlMs = leaseTtlMs;
    this.maxMessageSize = maxMessageSize;
  }

  @Override
  public void onNext(WorkClientMsg msg) {
    if (ended) {
      return;
    }
    int size = msg.getSerializedSize();
    if (size > maxMessageSize) {
      // grpc-go's Recv fails with this status; the runtime unregisters and returns it.
      lose(
          Status.RESOURCE_EXHAUSTED.withDescription(
              "grpc: received message larger than max (" + size + " vs. " + maxMessageSize + ")"),
          true);
      return;
    }
    if (msg.getBodyCase() == WorkClientMsg.BodyCase.REGISTER) {
      workerId = msg.getRegister().getWorkerId(); // Go takes the id before validating it
      out.workerId(workerId);
    }
    events.record(out.streamId(), workerId, Event.Direction.IN, msg);
    if (wire.isDebugEnabled()) {
      wire.debug("stream={} worker_id={} IN {}", out.streamId(), workerId, Wire.describe(msg));
    }
    try {
      handle(msg);
    } catch (RuntimeException e) { // a LocalRuntime bug must not leave the stream half-handled
      log.error(
          "stream={} worker_id={} failed handling {}",
          out.streamId(),
          workerId,
          Wire.describe(msg),
          e);
      lose(Status.INTERNAL.withDescription("LocalRuntime failed: " + e), true);
    }
    out.consumed();
    out.flush();
  }

  private void handle(WorkClientMsg msg) {
    switch (msg.getBodyCase()) {
      case REGISTER -> onRegister(msg.getRegister());
      case HEARTBEAT -> onHeartbeat();
      case RESULT -> {
        if (registered("result")) {
          endIfError(Status.Code.NOT_FOUND, registry.complete(workerId, msg.getResult()));
        }
      }
      case NACK -> {
        if (registered("nack")) {
          endIfError(Status.Code.NOT_FOUND, registry.nack(workerId, msg.getNack()));
        }
      }
      case BODY_NOT_SET -> end(Status.INVALID_ARGUMENT.withDescription(Wire.UNKNOWN_MESSAGE));
    }
  }

  private void onRegister(WorkRegister reg) {
    String error = registry.register(reg, out);
    if (error != null) {
      end(Status.INVALID_ARGUMENT.withDescription(error));
      return;
    }
    if (!out.send(Wire.registered(workerId, leaseTtlMs))) {
      registry.unregister(workerId, "could not send registered");
      ended = true;
    }
  }

  private void onHeartbeat() {
    if (!registered("heartbeat")) {
      return;
    }
    if (registry.heartbeatsLost()) {
      return; // as if it never arrived: no lease renewal, no ack
    }
    if (!registry.heartbeat(workerId)) {
      end(Status.NOT_FOUND.withDescription(Wire.unknownWorker(workerId)));
      return;
    }
    out.send(Wire.heartbeatAck());
  }

  /** Go's check is for an empty id, so a {@code register} with an empty id still counts as none. */
  private boolean registered(String what) {
    if (workerId == null || workerId.isEmpty()) {
      end(Status.FAILED_PRECONDITION.withDescription(Wire.registerFirst(what)));
      return false;
    }
    return true;
  }

  private void endIfError(Status.Code code, String error) {
    if (error != null) {
      end(code.toStatus().withDescription(error));
    }
  }

  /** The runtime ends the stream with an error; the registration (if any) stays. */
  private void end(Status status) {
    ended = true;
    log.warn(
        "stream={} worker_id={} ended by the runtime: {} {}",
        out.streamId(),
        workerId,
        status.getCode(),
        status.getDescription());
    out.close(status);
  }

  @Override
  public void onError(Throwable t) {
    if (!ended) {
      lose(Status.fromThrowable(t), false);
    }
  }

  /** Receiving failed: the worker id is unregistered, as on a clean end. */
  private void lose(Status status, boolean tellClient) {
    ended = true;
    if (workerId != null && !workerId.isEmpty()) {
      registry.unregister(workerId, "stream " + out.streamId() + " failed: " + status.getCode());
    }
    if (tellClient) {
      log.warn(
          "stream={} worker_id={} failed: {} {}",
          out.streamId(),
          workerId,
          status.getCode(),
          status.getDescription());
      out.close(status);
    } else {
      out.abort(status);
    }
  }

  @Override
  public void onCompleted() {
    if (ended) {
      return;
    }
    ended = true;
    if (workerId != null && !workerId.isEmpty()) {
      registry.unregister(workerId, "stream " + out.streamId() + " closed by the worker");
    }
    out.close(Status.OK);
  }
}
