package dev.phrony.worker;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/** Waits for a condition with a deadline: tests never sleep "to give it time". */
public final class Await {
  public static final Duration DEFAULT = Duration.ofSeconds(20);

  private Await() {}

  public static void until(String what, BooleanSupplier condition) {
    until(what, condition, DEFAULT);
  }

  public static void until(String what, BooleanSupplier condition, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out after " + timeout.toMillis() + " ms waiting for: "
            + what);
      }
      LockSupport.parkNanos(2_000_000); // poll every 2 ms until the deadline
    }
  }
}
