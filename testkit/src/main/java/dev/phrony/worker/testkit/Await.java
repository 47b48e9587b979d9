package dev.phrony.worker.testkit;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * The one way tests wait: for a condition, with a deadline, never "a bit to give it time". Used by
 * the testkit's own tests, the host's and the process-level ones, and by the bench.
 */
public final class Await {
  public static final Duration DEFAULT = Duration.ofSeconds(20);

  private Await() {}

  public static void until(String what, BooleanSupplier condition) {
    until(what, condition, DEFAULT);
  }

  public static void until(String what, BooleanSupplier condition, Duration timeout) {
    if (!holds(condition, timeout)) {
      throw new AssertionError(
          "timed out after " + timeout.toMillis() + " ms waiting for: " + what);
    }
  }

  /**
   * Waits as {@link #until} does, but answers false at the deadline instead of failing: for a
   * caller that reports a condition that never held (the bench's rows) rather than failing on it.
   * What the condition throws goes to the caller. When it answers true, the condition has just
   * held: the caller's clock read right after is when.
   */
  public static boolean holds(BooleanSupplier condition, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      LockSupport.parkNanos(2_000_000); // poll every 2 ms until the deadline
    }
    return true;
  }

  /**
   * {@link #until(String, BooleanSupplier, Duration)}, asking {@code condition} once every {@code
   * every} at most: for a condition that costs (a request to a process under load).
   */
  public static void until(
      String what, BooleanSupplier condition, Duration timeout, Duration every) {
    until(what, throttled(condition, every), timeout);
  }

  /** {@link #holds(BooleanSupplier, Duration)}, asking once every {@code every} at most. */
  public static boolean holds(BooleanSupplier condition, Duration timeout, Duration every) {
    return holds(throttled(condition, every), timeout);
  }

  private static BooleanSupplier throttled(BooleanSupplier condition, Duration every) {
    long[] due = {System.nanoTime()};
    return () -> {
      long now = System.nanoTime();
      if (now - due[0] < 0) {
        return false;
      }
      due[0] = now + every.toNanos();
      return condition.getAsBoolean();
    };
  }
}
