package dev.phrony.worker.ops;

import java.time.Duration;
import java.util.function.IntSupplier;

/**
 * What the work loop reports as it runs; an implementation turns it into meters. The default
 * methods do nothing ({@link #NONE}), so tests and {@code dev} need no metrics library.
 *
 * <p>Gauges (slots in use, registered, the outbox) are read when scraped, from suppliers handed
 * over once, so nothing is counted twice and the hot path does not touch them.
 */
public interface WorkerMetrics {
  WorkerMetrics NONE = new WorkerMetrics() {};

  /**
   * The meters of one {@code tool@version}; called once per handler when the dispatcher is made.
   *
   * @param key {@code tool@version}
   * @param maxConcurrency the slots advertised for it
   * @param slotsInUse reads the slots in use now
   */
  default ToolMetrics tool(String key, int maxConcurrency, IntSupplier slotsInUse) {
    return ToolMetrics.NONE;
  }

  /** The meters that count invokes for a {@code tool@version} this worker does not serve. */
  default ToolMetrics unknownTool() {
    return ToolMetrics.NONE;
  }

  /** A stream ended and the worker is about to reconnect. */
  default void reconnect(ReconnectReason reason) {}

  /**
   * A registered stream was killed by the runtime and contained: {@code handedOver} calls moved to
   * a rescue registration, and the dead entry left in routing was replaced {@code window} after the
   * stream ended (calls routed to it meanwhile failed).
   */
  default void streamKilled(StreamKill cause, int handedOver, Duration window) {}

  /** A heartbeat was acked after this long. */
  default void heartbeatRoundTrip(Duration roundTrip) {}
}
