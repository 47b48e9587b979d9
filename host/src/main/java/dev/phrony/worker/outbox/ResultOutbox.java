package dev.phrony.worker.outbox;

import java.util.Collection;
import java.util.List;
import java.util.Optional;

/**
 * Results held until the runtime's {@code result_ack} (protocol.md rule 3), and the memory of
 * calls that must never run twice (rule 5).
 *
 * <p>The session calls {@link #hold} before a result is sent, so an implementation may make it
 * durable first (the durable outbox writes and flushes it to disk); {@link #release} on
 * {@code result_ack}. A held result the runtime no longer expects (it made the call
 * indeterminate) is {@linkplain #markOrphaned orphaned}: kept for an operator, never resent
 * unless the runtime invokes that call id again.
 *
 * <p>Implementations are thread-safe: handler threads hold, the stream's inbound thread
 * releases.
 */
public interface ResultOutbox {

  /** Keeps {@code result} until released; returns once it is as safe as this outbox makes it. */
  void hold(HeldResult result);

  /** The held (or orphaned) result for {@code callId}. */
  Optional<HeldResult> find(String callId);

  /** Forgets {@code callId}: the runtime has recorded its result. Unknown ids are ignored. */
  void release(String callId);

  /** Marks a held result as orphaned: not advertised or resent, kept for an operator. */
  void markOrphaned(String callId);

  /** True if {@code callId} is held and orphaned. */
  boolean isOrphaned(String callId);

  /** Held results that are not orphaned: advertised in {@code register.in_flight}. */
  Collection<String> pendingIds();

  /** How many results are held (orphaned included). */
  int size();

  /**
   * Records, before the handler of a {@code non_idempotent_write} or {@code irreversible_action}
   * call runs, that it is about to run; returns once that is as safe as this outbox makes it. A
   * later {@link #hold} for the call supersedes the intent. Calls of other classes are ignored.
   * Called on the handler's thread, never the stream's: a durable outbox flushes to disk here.
   *
   * @throws java.io.UncheckedIOException if a durable outbox could not record it; the handler
   *     must then not run (nack the call)
   */
  default void recordIntent(IntentRecord intent) {}

  /**
   * The call's handler was stopped (cancelled) before it produced a result: if it recorded an
   * intent, that call is now interrupted, and a later invoke of it is refused instead of run
   * again (the handler may have acted).
   */
  default void markInterrupted(String callId) {}

  /**
   * True if {@code callId} had an intent and no result when this outbox was opened, or was
   * {@linkplain #markInterrupted cancelled mid-run}: its handler may or may not have acted. A
   * re-invoke must not run it again (nack {@code previous_attempt_interrupted}).
   */
  default boolean wasInterrupted(String callId) {
    return false;
  }

  /** Interrupted calls: advertised in {@code register.in_flight} alongside {@link #pendingIds}. */
  default Collection<String> interruptedIds() {
    return List.of();
  }
}
