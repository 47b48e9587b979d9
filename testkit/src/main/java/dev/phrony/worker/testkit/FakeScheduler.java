package dev.phrony.worker.testkit;

import dev.phrony.worker.time.Scheduler;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;

/**
 * A {@link Scheduler} on a {@link ManualClock}, after grpc-java's {@code FakeClock}: tasks run only
 * when a test {@linkplain #advance advances} time, on the test's thread, in the order they are due
 * (ties in the order scheduled). Thread-safe, so code under test may schedule from any thread.
 */
public final class FakeScheduler implements Scheduler {
  private record Task(Instant due, long seq, Runnable body) {}

  private final ManualClock clock;
  private final PriorityQueue<Task> queue =
      new PriorityQueue<>(
          (a, b) -> {
            int c = a.due().compareTo(b.due());
            return c != 0 ? c : Long.compare(a.seq(), b.seq());
          });
  private long seq;

  public FakeScheduler(ManualClock clock) {
    this.clock = clock;
  }

  public FakeScheduler() {
    this(new ManualClock());
  }

  @Override
  public synchronized Handle schedule(Runnable body, Duration delay) {
    Task t =
        new Task(clock.instant().plus(delay.isNegative() ? Duration.ZERO : delay), seq++, body);
    queue.add(t);
    return () -> {
      synchronized (this) {
        queue.remove(t);
      }
    };
  }

  @Override
  public InstantSource clock() {
    return clock;
  }

  public ManualClock manualClock() {
    return clock;
  }

  /** Moves time forward by {@code step}, running every task that falls due on the way. */
  public void advance(Duration step) {
    Instant end = clock.instant().plus(step);
    while (true) {
      Task next;
      synchronized (this) {
        next = queue.peek();
        if (next == null || next.due().isAfter(end)) {
          break;
        }
        queue.poll();
      }
      if (next.due().isAfter(clock.instant())) {
        clock.set(next.due());
      }
      next.body().run();
    }
    if (end.isAfter(clock.instant())) {
      clock.set(end);
    }
  }

  /** Runs what is due now without moving time. */
  public void runDue() {
    advance(Duration.ZERO);
  }

  /** Tasks waiting to run. */
  public synchronized int pending() {
    return queue.size();
  }

  /** When each waiting task is due, soonest first. */
  public synchronized List<Instant> dueTimes() {
    List<Task> tasks = new ArrayList<>(queue);
    tasks.sort(queue.comparator());
    return tasks.stream().map(Task::due).toList();
  }
}
