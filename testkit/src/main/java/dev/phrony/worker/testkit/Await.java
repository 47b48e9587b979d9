package dev.phrony.worker.testkit;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * The one way tests wait: for a condition, with a deadline, never "a bit to give it time". Used
 * by the testkit's own tests, the host's and the process-level ones.
 */
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

    /**
     * {@link #until(String, BooleanSupplier, Duration)}, asking {@code condition} once every
     * {@code every} at most: for a condition that costs (a request to a process under load).
     */
    public static void until(String what, BooleanSupplier condition, Duration timeout,
            Duration every) {
        long[] due = {System.nanoTime()};
        until(what, () -> {
            long now = System.nanoTime();
            if (now - due[0] < 0) {
                return false;
            }
            due[0] = now + every.toNanos();
            return condition.getAsBoolean();
        }, timeout);
    }
}
