package dev.phrony.worker.outbox;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Results held until the runtime's {@code result_ack} (protocol.md rule 3), and the memory of calls
 * that must never run twice (rule 5).
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
public interface ResultOutbox {

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

  /** Why results cannot be made durable now (the worker is then not ready); empty if they can. */
  default Optional<String> diskProblem() {
    return Optional.empty();
  }

  /** {@link #holdAsync} and wait (tools and tests; the worker never blocks on it). */
  default void hold(HeldResult result) {
    await(holdAsync(result));
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

  /**
   * True if a call of {@code sideEffectClass} (wire name) must have its intent recorded before its
   * handler may start. Calls of other classes never record one.
   */
  default boolean needsIntent(String sideEffectClass) {
    return false;
  }

  /**
   * Records that the handler of a call that must never run twice is about to run; the future
   * completes once that is as safe as this outbox makes it, and the handler may not start before. A
   * later hold for the call supersedes the intent. The outbox knows the intent from the moment this
   * is called, so {@link #markInterrupted} works while it is being written. The future fails with
   * an {@link IOException} if the intent could not be recorded: the handler must then not run.
   */
  default CompletableFuture<Void> recordIntentAsync(IntentRecord intent) {
    return CompletableFuture.completedFuture(null);
  }

  /** {@link #recordIntentAsync} and wait; throws {@link UncheckedIOException} if it failed. */
  default void recordIntent(IntentRecord intent) {
    await(recordIntentAsync(intent));
  }

  /** Forgets the intent of a call whose handler never started (its arguments were refused). */
  default void dropIntent(String callId) {}

  /**
   * The call's handler was stopped (cancelled) before it produced a result: if it recorded an
   * intent, that call is now interrupted, and a later invoke of it is refused instead of run again
   * (the handler may have acted).
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

  /** Waits for {@code f}; an I/O failure is rethrown unchecked, anything else as it was. */
  static void await(CompletableFuture<Void> f) {
    try {
      f.join();
    } catch (CompletionException e) {
      Throwable c = e.getCause();
      if (c instanceof IOException io) {
        throw new UncheckedIOException(io.getMessage(), io);
      }
      if (c instanceof RuntimeException re) {
        throw re;
      }
      if (c instanceof Error err) {
        throw err;
      }
      throw e;
    }
  }
}
