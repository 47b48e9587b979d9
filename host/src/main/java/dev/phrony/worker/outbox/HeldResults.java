package dev.phrony.worker.outbox;

import java.util.Collection;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * Results held until the runtime's {@code result_ack} (protocol.md rule 3).
 *
 * <p>A result is {@linkplain #holdAsync held} before it is sent, so an implementation may make it
 * durable first (the durable outbox writes and flushes it to disk); {@link #release} on {@code
 * result_ack}. A held result the runtime no longer expects (it made the call indeterminate) is
 * {@linkplain #markOrphaned orphaned}: kept for an operator, never resent unless the runtime
 * invokes that call id again.
 *
 * <p>The writes that may wait for a disk are asynchronous, so the dispatcher's serialized context
 * never blocks on them: it goes on when their future completes. Implementations are thread-safe.
 */
public interface HeldResults {

  /**
   * Keeps {@code result} until released; the future completes once it is as safe as this outbox
   * makes it (for a durable one, on disk). While the disk refuses it the future stays pending (the
   * result must not be sent); it fails only if the outbox closes first.
   */
  CompletableFuture<Void> holdAsync(HeldResult result);

  /**
   * Holds {@code result} without making it durable: for outcomes whose handler never ran (refused
   * arguments, an intent that could not be written, a deadline passed before start).
   */
  default CompletableFuture<Void> holdInMemoryAsync(HeldResult result) {
    return holdAsync(result);
  }

  /** {@link #holdAsync} and wait (tools and tests; the worker never blocks on it). */
  default void hold(HeldResult result) {
    Futures.await(holdAsync(result));
  }

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
}
