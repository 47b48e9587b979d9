package dev.phrony.worker.work;

import dev.phrony.worker.time.Scheduler;
import java.time.Duration;
import java.util.function.Consumer;

/**
 * Invokes that found every slot of their tool taken (protocol.md rule 6). The runtime frees a
 * cancelled call's slot, hands it to its next waiting call and only then sends the {@code cancel}:
 * that invoke overtakes the cancel that makes room for it. So such an invoke waits, in order, up to
 * a grace for a slot to come free; then it is refused. Part of the {@link Dispatcher}, in its
 * context: each waiting call is a {@link CallRecord} in state {@code WAITING}, queued in its {@link
 * ToolSlots#waiting}.
 */
final class SlotWaits {
  /** What the dispatcher does when a wait ends. */
  interface Ends {
    /** A slot came free for {@code call}, first in line: it may take it. */
    void slotFree(CallRecord call);

    /** The grace passed with no slot: {@code call} is refused {@code capacity_exhausted}. */
    void gaveUp(CallRecord call);
  }

  private final Scheduler scheduler;
  private final Consumer<Runnable> post;
  private final Duration grace;
  private final Ends ends;

  SlotWaits(Scheduler scheduler, Consumer<Runnable> post, Duration grace, Ends ends) {
    this.scheduler = scheduler;
    this.post = post;
    this.grace = grace;
    this.ends = ends;
  }

  /** True if an invoke of {@code slots} must queue behind earlier ones (none overtakes them). */
  static boolean othersWait(ToolSlots slots) {
    return !slots.waiting.isEmpty();
  }

  /** {@code call} waits for a slot of its tool, after those already waiting. */
  void await(CallRecord call) {
    call.waiting(scheduler.schedule(() -> post.accept(() -> graceOver(call)), grace));
    call.slots.waiting.add(call);
  }

  private void graceOver(CallRecord call) {
    if (stop(call)) {
      ends.gaveUp(call);
    }
  }

  /** Takes {@code call} out of its queue; false if it was no longer waiting. */
  boolean stop(CallRecord call) {
    call.grace().cancel();
    return call.slots.waiting.remove(call);
  }

  /** A slot of {@code slots} was given back: the oldest waiting calls take the free ones. */
  void slotFreed(ToolSlots slots) {
    CallRecord c;
    while (slots.busy() < slots.max && (c = slots.waiting.peek()) != null) {
      stop(c);
      ends.slotFree(c);
    }
  }
}
