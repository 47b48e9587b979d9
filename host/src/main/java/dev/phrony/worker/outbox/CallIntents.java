package dev.phrony.worker.outbox;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Collection;
import java.util.concurrent.CompletableFuture;

/**
 * The memory of calls that must never run twice (protocol.md rule 5): an intent recorded before
 * such a call's handler starts, so a call that may have acted is refused rather than run again.
 *
 * <p>No method here has a default: an outbox states what it keeps (the in-memory one keeps none,
 * and says so), rather than inheriting a silent "nothing".
 */
public interface CallIntents {

  /**
   * True if a call of {@code sideEffectClass} (wire name) must have its intent recorded before its
   * handler may start. Calls of other classes never record one.
   */
  boolean needsIntent(String sideEffectClass);

  /**
   * Records that the handler of a call that must never run twice is about to run; the future
   * completes once that is as safe as this outbox makes it, and the handler may not start before. A
   * later hold for the call supersedes the intent. The outbox knows the intent from the moment this
   * is called, so {@link #markInterrupted} works while it is being written. The future fails with
   * an {@link IOException} if the intent could not be recorded: the handler must then not run.
   */
  CompletableFuture<Void> recordIntentAsync(IntentRecord intent);

  /** {@link #recordIntentAsync} and wait; throws {@link UncheckedIOException} if it failed. */
  default void recordIntent(IntentRecord intent) {
    Futures.await(recordIntentAsync(intent));
  }

  /** Forgets the intent of a call whose handler never started (its arguments were refused). */
  void dropIntent(String callId);

  /**
   * The call's handler was stopped (cancelled) before it produced a result: if it recorded an
   * intent, that call is now interrupted, and a later invoke of it is refused instead of run again
   * (the handler may have acted).
   */
  void markInterrupted(String callId);

  /**
   * True if {@code callId} had an intent and no result when this outbox was opened, or was
   * {@linkplain #markInterrupted cancelled mid-run}: its handler may or may not have acted. A
   * re-invoke must not run it again (nack {@code previous_attempt_interrupted}).
   */
  boolean wasInterrupted(String callId);

  /** Interrupted calls: advertised in {@code register.in_flight} alongside the held results. */
  Collection<String> interruptedIds();
}
