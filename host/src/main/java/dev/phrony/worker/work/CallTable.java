package dev.phrony.worker.work;

import java.util.Collection;
import java.util.HashMap;
import java.util.List;

/**
 * Every call the worker serves, by call id: one {@link CallRecord} from its invoke to its ack (or
 * to the moment it is orphaned or has settled after a cancel). Confined to the dispatcher's
 * context, which the dispatcher's parts share.
 */
final class CallTable implements CallRecord.Counts {
  private final HashMap<String, CallRecord> byId = new HashMap<>();

  // ---- written in the context, read anywhere (metrics, readiness, tests) ----
  /** Calls admitted whose outcome is not held yet (cancelled ones excluded). */
  private volatile int running;

  /** Handlers whose call was cancelled (or outlived its deadline) and that still run. */
  private volatile int apart;

  CallRecord get(String callId) {
    return byId.get(callId);
  }

  void put(CallRecord call) {
    byId.put(call.callId, call);
  }

  /** Removes {@code call} if it is still the record of its id. */
  void remove(CallRecord call) {
    byId.remove(call.callId, call);
  }

  /** A cancelled call leaves once nothing of it runs or is being written any more. */
  void forgetIfSettled(CallRecord call) {
    if (call.state() == CallRecord.State.CANCELLED && call.settled()) {
      remove(call);
    }
  }

  // Counted by the records' own transitions. One writer (the context): a volatile read and
  // write, no atomic update needed. Volatile rather than asked through the context: /readyz and
  // the metrics scrape must not wait on the I/O thread, whose being held is what /readyz reports.
  // Cost: a volatile += is 7-12 ns (a plain one under 1), two per call, against 4.5-4.9 us
  // of the I/O thread's CPU per call (InboundSlices): well under 1 % (docs/architecture.md,
  // "One way to share state").
  @Override
  public void running(int delta) {
    running += delta;
  }

  @Override
  public void apart(int delta) {
    apart += delta;
  }

  /** Calls admitted whose outcome is not held yet (cancelled ones excluded); from any thread. */
  int running() {
    return running;
  }

  /** Handlers still running after their call was cancelled or timed out; from any thread. */
  int apart() {
    return apart;
  }

  /** A copy: callers change the table while they walk it. */
  List<CallRecord> all() {
    return List.copyOf(byId.values());
  }

  Collection<CallRecord> view() {
    return byId.values();
  }

  /** True while a result sent on a stream that is still open waits for its ack there. */
  boolean awaitingAckOnOpenStream() {
    for (CallRecord c : byId.values()) {
      if (c.resultHeld() && c.state() != CallRecord.State.DETACHED && c.owner().live()) {
        return true;
      }
    }
    return false;
  }
}
