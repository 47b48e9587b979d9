package dev.phrony.worker.outbox;

import dev.phrony.worker.call.CallOutcome;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Objects;

/**
 * One call the outbox remembers, as operators see it.
 *
 * @param callId the runtime's call id
 * @param state held, orphaned, interrupted, or running (an intent of a live worker)
 * @param toolKey {@code tool@version} (may be null)
 * @param sessionId the agent session (may be null)
 * @param sideEffectClass wire name (may be null)
 * @param startedAt when its handler started (intents only, else null)
 * @param completedAt when its outcome was produced (results only, else null)
 * @param since when it entered its state: completed (held), orphaned, interrupted, started
 *     (running); the age and retention count from here
 * @param durable whether it is on disk (results held in memory only are not)
 * @param outcome the result (null for intents)
 */
public record OutboxEntry(
    String callId,
    State state,
    String toolKey,
    String sessionId,
    String sideEffectClass,
    Instant startedAt,
    Instant completedAt,
    Instant since,
    boolean durable,
    CallOutcome outcome) {

  public OutboxEntry {
    Objects.requireNonNull(callId, "callId");
    Objects.requireNonNull(state, "state");
    Objects.requireNonNull(since, "since");
  }

  /** What the outbox keeps the call for. */
  public enum State {
    /** A result waiting for the runtime's {@code result_ack}; advertised in {@code in_flight}. */
    HELD,
    /** A result the runtime no longer expects; kept for an operator until retention ends. */
    ORPHANED,
    /** An intent without a result after a crash: the handler may or may not have acted. */
    INTERRUPTED,
    /** An intent of the worker running now: its handler is running. */
    RUNNING;

    /** Lower-case name, as printed. */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** Result payload (or error text) size in bytes; 0 for intents. */
  public long size() {
    return outcome == null ? 0 : outcome.size();
  }

  /** Time in the current state at {@code now} (never negative). */
  public Duration age(Instant now) {
    Duration d = Duration.between(since, now);
    return d.isNegative() ? Duration.ZERO : d;
  }
}
