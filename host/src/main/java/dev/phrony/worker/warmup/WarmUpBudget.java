package dev.phrony.worker.warmup;

import java.time.Duration;

/**
 * How much a {@code run} warms its call path before it registers ({@code --warm-up}): {@code off},
 * a number of calls, or a time. A call budget is also bounded by {@link #MAX_TIME}, so a slow
 * machine does not hold the worker back for long.
 *
 * @param calls calls to serve (0 with a time budget, or off)
 * @param time how long to serve calls at most
 */
public record WarmUpBudget(long calls, Duration time) {
  /** The longest any warm-up runs. */
  public static final Duration MAX_TIME = Duration.ofSeconds(60);

  /** No warm-up: register at once. */
  public static final WarmUpBudget OFF = new WarmUpBudget(0, Duration.ZERO);

  /** {@code run}'s default (measured with {@code bin/bench --only cold}, row 8e). */
  public static final String DEFAULT = "200000";

  public WarmUpBudget {
    if (calls < 0 || time.isNegative() || time.compareTo(MAX_TIME) > 0) {
      throw new IllegalArgumentException("a warm-up is 0 or more calls in at most 60s");
    }
  }

  /** {@code n} calls (bounded by {@link #MAX_TIME}); 0 is off. */
  public static WarmUpBudget ofCalls(long n) {
    return n == 0 ? OFF : new WarmUpBudget(n, MAX_TIME);
  }

  /** Calls for {@code d}; zero is off. */
  public static WarmUpBudget ofTime(Duration d) {
    return d.isZero() ? OFF : new WarmUpBudget(0, d);
  }

  public boolean off() {
    return calls == 0 && time.isZero();
  }

  /** As {@code --warm-up} takes it. */
  @Override
  public String toString() {
    if (off()) {
      return "off";
    }
    if (calls > 0) {
      return Long.toString(calls);
    }
    return time.toMillis() % 1000 == 0 ? time.toSeconds() + "s" : time.toMillis() + "ms";
  }
}
