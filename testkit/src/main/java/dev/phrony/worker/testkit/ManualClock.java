package dev.phrony.worker.testkit;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/**
 * An {@link InstantSource} that only moves when a test moves it.
 *
 * <p>Give it to {@link LocalRuntime.Builder#clock(InstantSource)} (or to anything else that
 * computes leases, heartbeats or deadlines from an {@code InstantSource}) and drive time with
 * {@link #advance(Duration)} instead of sleeping. Thread-safe.
 */
public final class ManualClock implements InstantSource {

  private final AtomicReference<Instant> now;

  /** A clock standing at {@code start}. */
  public ManualClock(Instant start) {
    this.now = new AtomicReference<>(Objects.requireNonNull(start, "start"));
  }

  /** A clock standing at 2030-01-01T00:00:00Z: a fixed, recognisable instant for test output. */
  public ManualClock() {
    this(Instant.parse("2030-01-01T00:00:00Z"));
  }

  @Override
  public Instant instant() {
    return now.get();
  }

  /**
   * Moves the clock forward by {@code step} (which must not be negative) and returns the new
   * instant.
   */
  public Instant advance(Duration step) {
    Objects.requireNonNull(step, "step");
    if (step.isNegative()) {
      throw new IllegalArgumentException("time only moves forward: " + step);
    }
    return now.updateAndGet(t -> t.plus(step));
  }

  /** Sets the clock to {@code instant}; going backwards is allowed, to test clock steps. */
  public void set(Instant instant) {
    now.set(Objects.requireNonNull(instant, "instant"));
  }

  @Override
  public String toString() {
    return "ManualClock[" + now.get() + "]";
  }
}
