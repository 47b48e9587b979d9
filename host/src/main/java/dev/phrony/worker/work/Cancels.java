package dev.phrony.worker.work;

import dev.phrony.worker.call.CallPipeline;
import dev.phrony.worker.ops.InvocationOutcome;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A call's early ends: the runtime's cancel (protocol.md rule 4: interrupt, free the slot, send
 * nothing, ever), a drain that ran out, and its deadline. Part of the {@link Dispatcher}, in its
 * context.
 */
final class Cancels {
  private static final Logger log = LoggerFactory.getLogger(Dispatcher.class);

  private final CallTable calls;
  private final SlotWaits slotWaits;
  private final OrphanPolicy orphans;
  private final Outcomes outcomes;
  private final IdleWaiters idle;
  private final HandlerThreads threads;

  Cancels(
      CallTable calls,
      SlotWaits slotWaits,
      OrphanPolicy orphans,
      Outcomes outcomes,
      IdleWaiters idle,
      HandlerThreads threads) {
    this.threads = threads;
    this.calls = calls;
    this.slotWaits = slotWaits;
    this.orphans = orphans;
    this.outcomes = outcomes;
    this.idle = idle;
  }

  /** The runtime cancelled {@code callId} on {@code sink}. */
  void cancelled(String callId, CallSink sink) {
    CallRecord call = calls.get(callId);
    if (call != null && call.state() == CallRecord.State.WAITING) {
      // Cancelled before a slot came: it never started, nothing is sent.
      slotWaits.stop(call);
      calls.remove(call);
      call.slots.metrics.count(InvocationOutcome.CANCELLED);
      idle.check();
      return;
    }
    if (call == null || call.resultHeld()) {
      orphans.cancelledAfterFinish(callId, sink);
      idle.check();
      return;
    }
    if (call.state() != CallRecord.State.CANCELLED) {
      cancel(call, "cancelled by the runtime");
    }
  }

  /** Cancels every call still running. */
  void all(String why) {
    for (CallRecord c : calls.all()) {
      if (c.running()) {
        cancel(c, why);
      }
    }
  }

  /** Cancels {@code sink}'s running calls; its waiting ones leave their queue, {@code refused}. */
  void on(CallSink sink, String why, Consumer<CallRecord> refused) {
    for (CallRecord c : calls.all()) {
      if (c.owner() != sink) {
        continue;
      }
      if (c.state() == CallRecord.State.WAITING && slotWaits.stop(c)) {
        calls.remove(c);
        refused.accept(c);
      } else if (c.running()) {
        cancel(c, why);
      }
    }
    idle.check();
  }

  /** Interrupts {@code call}, frees its slot; nothing is sent for it from now on. */
  void cancel(CallRecord call, String why) {
    CallRecord.State was = call.cancelled();
    if (was != CallRecord.State.HOLDING) { // a held outcome was counted, and it may have acted
      call.slots.metrics.count(InvocationOutcome.CANCELLED);
      if (call.intentWritten()) {
        outcomes.cancelledAfterIntent(call);
      }
    }
    try (var ctx = Outcomes.context(call)) {
      log.debug("call {} in state {}; handler interrupted", why, was);
    }
    interrupt(call); // last: cancelling its stage may run the handler's own code
    calls.forgetIfSettled(call);
    idle.check();
  }

  void deadlinePassed(CallRecord call) {
    switch (call.state()) {
      case INTENT -> call.deadlinePassedDuringIntent(); // answered once the intent write returns
      case RUNNING -> {
        call.deadlinePassedWhileRunning();
        outcomes.decide(
            call,
            CallPipeline.deadlineExceeded(outcomes.elapsedMs(call)),
            InvocationOutcome.DEADLINE_EXCEEDED,
            true);
        interrupt(call); // last: cancelling its stage may run the handler's own code
      }
      default -> {} // decided already
    }
  }

  /** Tells the handler its call is off: the flag, its stage cancelled, its thread interrupted. */
  private void interrupt(CallRecord call) {
    call.context().markCancelled();
    threads.interrupt(call);
  }
}
