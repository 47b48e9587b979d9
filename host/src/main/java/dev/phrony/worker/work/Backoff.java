package dev.phrony.worker.work;

import java.time.Duration;
import java.util.function.LongUnaryOperator;

/**
 * Reconnect delays: exponential with full jitter (a uniform draw in {@code [0, min(cap, initial *
 * 2^n))}), so a fleet of workers that lost one runtime does not reconnect in step. Not thread-safe;
 * owned by the reconnect loop.
 */
final class Backoff {
  private final long initialMs;
  private final long maxMs;
  private final LongUnaryOperator uniformBelow;
  private int attempt;

  /**
   * @param uniformBelow returns a uniform value in {@code [0, bound)}; injected so tests are
   *     deterministic
   */
  Backoff(Duration initial, Duration max, LongUnaryOperator uniformBelow) {
    this.initialMs = Math.max(1, initial.toMillis());
    this.maxMs = Math.max(initialMs, max.toMillis());
    this.uniformBelow = uniformBelow;
  }

  /** The delay before the next attempt; each call widens the window until the cap. */
  Duration next() {
    long bound = initialMs << Math.min(attempt, 30);
    bound = Math.min(maxMs, bound);
    attempt++;
    return Duration.ofMillis(uniformBelow.applyAsLong(bound + 1));
  }

  /** After a healthy stream, start again from the initial window. */
  void reset() {
    attempt = 0;
  }
}
