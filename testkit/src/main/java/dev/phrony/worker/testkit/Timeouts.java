package dev.phrony.worker.testkit;

import dev.phrony.worker.time.Scheduler;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The dispatch bounds of calls in flight, with one task armed on the executor for the earliest of
 * them instead of one task per call: a task per call was a tenth of the runtime's thread at 100k
 * calls/s (a locked heap insert at dispatch and a locked removal at completion).
 *
 * <p>Every call of a lane has the same bound, so deadlines arrive in nondecreasing order and each
 * lane is a FIFO: adding appends, removing unlinks, both O(1). (An earlier deadline than the tail's
 * is still placed in order, walking back from the tail.) A removed head leaves the armed task in
 * place; it fires early, finds nothing due, and arms for the new head.
 *
 * <p>Guarded by the owner's {@code lock}, which every method but the task itself is called under.
 * Due items are handed to {@code onDue} after the lock is released, in deadline order.
 *
 * <p>Time is the {@link Scheduler}'s: deadlines are nanoseconds of its clock ({@link #now}), so a
 * test on a fake scheduler moves queue waits and execution bounds by advancing it.
 */
final class Timeouts<T> {

  /** A scheduled bound; pass it to {@link #remove} when the call ends first. */
  static final class Entry<T> {
    final T item;
    final long deadlineNanos;
    private final int lane;
    private Entry<T> prev;
    private Entry<T> next;
    private boolean linked = true;

    private Entry(T item, long deadlineNanos, int lane) {
      this.item = item;
      this.deadlineNanos = deadlineNanos;
      this.lane = lane;
    }
  }

  private final Object lock;
  private final Scheduler scheduler;
  private final Consumer<T> onDue;
  private final Entry<T>[] heads;
  private final Entry<T>[] tails;
  // Guarded by lock.
  private Scheduler.Handle armed;
  private long armedFor;

  /**
   * Counts arms, so a task that was replaced while it waited for the lock leaves {@link #armed}
   * alone.
   */
  private long generation;

  @SuppressWarnings("unchecked")
  Timeouts(Object lock, Scheduler scheduler, int lanes, Consumer<T> onDue) {
    this.lock = lock;
    this.scheduler = scheduler;
    this.onDue = onDue;
    this.heads = new Entry[lanes];
    this.tails = new Entry[lanes];
  }

  /** Now on {@code clock}, in nanoseconds since the epoch: the unit of every deadline here. */
  static long now(InstantSource clock) {
    Instant i = clock.instant();
    return i.getEpochSecond() * 1_000_000_000L + i.getNano();
  }

  /** Schedules {@code item} in {@code lane} for {@code deadlineNanos} (see {@link #now}). */
  Entry<T> add(int lane, T item, long deadlineNanos) {
    Entry<T> e = new Entry<>(item, deadlineNanos, lane);
    Entry<T> after = tails[lane];
    while (after != null && after.deadlineNanos - deadlineNanos > 0) {
      after = after.prev;
    }
    e.prev = after;
    e.next = after == null ? heads[lane] : after.next;
    if (e.next == null) {
      tails[lane] = e;
    } else {
      e.next.prev = e;
    }
    if (after == null) {
      heads[lane] = e;
    } else {
      after.next = e;
    }
    if (armed == null || deadlineNanos - armedFor < 0) {
      arm(deadlineNanos);
    }
    return e;
  }

  /** Unschedules {@code e}; nothing if it already fired or was removed. */
  void remove(Entry<T> e) {
    if (e == null || !e.linked) {
      return;
    }
    e.linked = false;
    if (e.prev == null) {
      heads[e.lane] = e.next;
    } else {
      e.prev.next = e.next;
    }
    if (e.next == null) {
      tails[e.lane] = e.prev;
    } else {
      e.next.prev = e.prev;
    }
    e.prev = null;
    e.next = null;
  }

  private void arm(long deadlineNanos) {
    if (armed != null) {
      armed.cancel();
    }
    armedFor = deadlineNanos;
    long g = ++generation;
    armed =
        scheduler.schedule(() -> fire(g), Duration.ofNanos(deadlineNanos - now(scheduler.clock())));
  }

  private void fire(long g) {
    List<Entry<T>> due = new ArrayList<>();
    synchronized (lock) {
      if (g == generation) {
        armed = null;
      }
      long now = now(scheduler.clock());
      Entry<T> earliest = null;
      for (int lane = 0; lane < heads.length; lane++) {
        Entry<T> head;
        while ((head = heads[lane]) != null && head.deadlineNanos - now <= 0) {
          remove(head);
          due.add(head);
        }
        if (head != null && (earliest == null || head.deadlineNanos - earliest.deadlineNanos < 0)) {
          earliest = head;
        }
      }
      if (earliest != null && (armed == null || earliest.deadlineNanos - armedFor < 0)) {
        arm(earliest.deadlineNanos);
      }
    }
    due.sort((a, b) -> Long.signum(a.deadlineNanos - b.deadlineNanos));
    for (Entry<T> e : due) {
      onDue.accept(e.item);
    }
  }
}
