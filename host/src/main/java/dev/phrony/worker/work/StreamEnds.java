package dev.phrony.worker.work;

import io.grpc.Status;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * What becomes of a stream's calls when it ends (protocol.md rules 3 and 9). Part of the {@link
 * Dispatcher}, in its context; the {@link Registrations} decide which:
 *
 * <ul>
 *   <li>{@link #detach}: the runtime dropped the registration, and with it the calls (they are
 *       indeterminate to it). They run on apart; their results are held for the next register.
 *   <li>{@link #handOver}: the runtime ended the stream with an error status and keeps its
 *       registration as a dead entry, with the calls still tracked on it. They move to a rescue
 *       registration, which lists them in its {@code in_flight} and answers them.
 * </ul>
 */
final class StreamEnds {
  private final CallTable calls;
  private final SlotWaits slotWaits;
  private final OrphanPolicy orphans;
  private final Outcomes outcomes;
  private final IdleWaiters idle;

  StreamEnds(
      CallTable calls,
      SlotWaits slotWaits,
      OrphanPolicy orphans,
      Outcomes outcomes,
      IdleWaiters idle) {
    this.calls = calls;
    this.slotWaits = slotWaits;
    this.orphans = orphans;
    this.outcomes = outcomes;
    this.idle = idle;
  }

  /** {@code sink} ended and the runtime dropped it: its calls run on apart, its slots are gone. */
  void detach(CallSink sink, Status status) {
    for (CallRecord c : calls.all()) {
      if (c.owner() != sink) {
        continue;
      }
      if (c.state() == CallRecord.State.WAITING) {
        slotWaits.stop(c); // the runtime made it indeterminate with its stream
        calls.remove(c);
      } else {
        c.detached();
      }
    }
    orphans.streamEnded(sink, status);
    idle.check();
  }

  /**
   * {@code from} ended with an error status, its registration left behind as a dead entry: every
   * call of it the worker still runs, waits to run or holds unacked moves to {@code to}, a
   * registration that lists them in its {@code in_flight} and from then on is the only one that may
   * answer them. The call the runtime named as unknown stays orphaned. Their slots were the dead
   * entry's: released (the entry that replaces it starts from none).
   *
   * @return the calls handed over, for {@code to}'s {@code in_flight}
   */
  Set<String> handOver(CallSink from, CallSink to, Status status) {
    String unknown = OrphanPolicy.unknownCallId(status.getDescription()).orElse(null);
    Set<String> moved = new LinkedHashSet<>();
    for (CallRecord c : calls.all()) {
      if (c.owner() != from || c.callId.equals(unknown)) {
        continue;
      }
      if (c.state() == CallRecord.State.CANCELLED) {
        c.detached(); // the runtime forgot it: nothing to hand over
        continue;
      }
      // A held result was maybe recorded already (then acked at `to`'s register), maybe not: it
      // is sent again on `to` only once that is registered and has not acked it.
      c.handedTo(to);
      moved.add(c.callId);
    }
    orphans.streamEnded(from, status); // the unknown call: orphaned, never sent again
    idle.check();
    return moved;
  }

  /**
   * {@code rescue} is registered: the runtime has acked (before {@code registered}) every handed
   * over result it had recorded; the rest are sent on it now.
   */
  void rescueRegistered(CallSink rescue) {
    for (CallRecord c : calls.all()) {
      if (c.owner() == rescue && c.state() == CallRecord.State.HANDED_OVER) {
        outcomes.send(c, rescue);
      }
    }
    idle.check();
  }
}
