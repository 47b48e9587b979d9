package dev.phrony.worker.ops;

import java.time.Duration;

/**
 * The meters of one {@code tool@version}, resolved once when the worker starts, so counting a call
 * is an increment on a meter already at hand (no lookup by name). Thread-safe, lock-free.
 */
public interface ToolMetrics {
  ToolMetrics NONE =
      new ToolMetrics() {
        @Override
        public void count(InvocationOutcome outcome) {}

        @Override
        public void handlerTime(Duration time) {}
      };

  /** One invoke of this tool ended so. */
  void count(InvocationOutcome outcome);

  /** A handler ran this long (to its result, error or deadline). */
  void handlerTime(Duration time);

  /** A handler of this tool ran on past its call's cancel or deadline (logged once per call). */
  default void runaway() {}
}
