package dev.phrony.worker.work;

import dev.phrony.worker.outbox.HeldResults;
import dev.phrony.worker.time.Scheduler;
import io.grpc.Status;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which held results the runtime still expects, and which are orphaned (protocol.md rules 3 and 9):
 * kept for an operator, never resent unless the runtime invokes that call id again.
 *
 * <ul>
 *   <li>A result sent on a stream waits for its {@code result_ack} there; when that stream ends
 *       first, the result stays held and is advertised in the next {@code in_flight}.
 *   <li>Results advertised at a register that the runtime neither acks nor re-invokes within a
 *       lease TTL are orphaned; so is a result that completes after that window, its stream gone.
 *   <li>A stream ended {@code NOT_FOUND} naming a call id orphans exactly that call.
 *   <li>A cancel of a call whose result is already out orphans it: the runtime forgot it.
 * </ul>
 *
 * <p>Confined to the dispatcher's serialized context, like the {@link CallTable} it judges: a
 * result sent waits for its ack as its call's record in state {@code SENT}, not in a map here.
 */
final class OrphanPolicy {
  private static final Logger log = LoggerFactory.getLogger(OrphanPolicy.class);

  private final HeldResults outbox;
  private final Scheduler scheduler;
  private final Executor context;
  private final CallTable calls;
  private CallSink windowStream;
  private Set<String> advertised = Set.of();
  private boolean windowClosed;
  private Scheduler.Handle windowTimer = Scheduler.NONE;

  OrphanPolicy(HeldResults outbox, Scheduler scheduler, Executor context, CallTable calls) {
    this.outbox = outbox;
    this.scheduler = scheduler;
    this.context = context;
    this.calls = calls;
  }

  /** {@code sink} registered having advertised {@code inFlight}; the window is one lease TTL. */
  void registered(CallSink sink, Set<String> inFlight, Duration ttl) {
    windowTimer.cancel();
    windowStream = sink;
    advertised = Set.copyOf(inFlight);
    windowClosed = false;
    windowTimer = scheduler.schedule(() -> context.execute(() -> closeWindow(sink)), ttl);
  }

  private void closeWindow(CallSink sink) {
    if (windowStream != sink || windowClosed) {
      return;
    }
    windowClosed = true;
    int n = 0;
    for (String callId : advertised) {
      CallRecord call = calls.get(callId);
      boolean sentHere =
          call != null && call.state() == CallRecord.State.SENT && call.owner() == sink;
      if (!sentHere && outbox.find(callId).isPresent() && !outbox.isOrphaned(callId)) {
        orphan(callId);
        n++;
      }
    }
    advertised = Set.of();
    if (n > 0) {
      log.warn(
          "{} results from earlier streams were not acked within a lease TTL; kept as"
              + " orphaned (their outcome is indeterminate to the runtime)",
          n);
    }
  }

  /** The runtime recorded the result: its record ends, the outbox releases it. */
  void acked(String callId) {
    CallRecord call = calls.get(callId);
    if (call != null && call.resultHeld()) {
      calls.remove(call);
    }
    outbox.release(callId);
  }

  /**
   * {@code call} finished after the stream it came on ended: its result is held, never sent on
   * another stream. Once the current stream's window has closed nobody will ask for it.
   */
  void heldWithoutStream(CallRecord call) {
    call.waitsForStream();
    if (windowStream != null && windowClosed && windowStream.live()) {
      orphan(call.callId);
      log.info(
          "call {} finished after its stream ended and the runtime did not invoke it again;"
              + " its result is kept as orphaned",
          call.callId);
    } else {
      log.debug(
          "call {} finished after its stream ended; result held for the next register",
          call.callId);
    }
  }

  /** The runtime cancelled a call whose result is already out (or held): it forgot it. */
  void cancelledAfterFinish(String callId, CallSink sink) {
    sink.unsend(callId); // still queued: it must not go out now
    if (outbox.find(callId).isPresent() && !outbox.isOrphaned(callId)) {
      orphan(callId);
      log.info("call {} was cancelled after it finished; its result is kept as orphaned", callId);
    } else {
      CallRecord call = calls.get(callId);
      if (call != null && call.resultHeld()) {
        calls.remove(call);
      }
    }
  }

  /**
   * {@code sink} ended with {@code status} (its calls were detached or handed over already): its
   * window closes, and a call the runtime named as unknown is orphaned.
   */
  void streamEnded(CallSink sink, Status status) {
    if (windowStream == sink) {
      windowTimer.cancel();
      windowTimer = Scheduler.NONE;
      windowStream = null;
      advertised = Set.of();
    }
    if (status.getCode() == Status.Code.NOT_FOUND) {
      unknownCallId(status.getDescription())
          .ifPresent(
              callId -> {
                if (outbox.find(callId).isPresent()) {
                  orphan(callId);
                  log.warn(
                      "runtime did not know call {}; its result is kept as orphaned and not sent"
                          + " again",
                      callId);
                }
              });
    }
  }

  /** Kept for an operator, never sent again unless invoked again: its record ends here. */
  private void orphan(String callId) {
    outbox.markOrphaned(callId);
    CallRecord call = calls.get(callId);
    if (call != null && call.resultHeld()) {
      calls.remove(call);
    }
  }

  /**
   * The call id the runtime named in a {@code NOT_FOUND} for a result ({@code unknown call_id "X"},
   * or {@code call_id "X" owned by worker ...}): Go's {@code %q}, unquoted exactly, so {@code
   * "s:1:12"} never matches {@code s:1:1}.
   */
  static Optional<String> unknownCallId(String description) {
    if (description == null) {
      return Optional.empty();
    }
    int at = description.indexOf("call_id \"");
    if (at < 0) {
      return Optional.empty();
    }
    return GoQuoted.unquote(description, at + "call_id ".length());
  }
}
