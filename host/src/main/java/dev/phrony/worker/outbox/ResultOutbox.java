package dev.phrony.worker.outbox;

import java.util.Optional;

/**
 * The outbox the call core writes to: the {@linkplain HeldResults results held until acked} and the
 * {@linkplain CallIntents intents of calls that must never run twice}. A caller that needs only one
 * of them takes that one.
 */
public interface ResultOutbox extends HeldResults, CallIntents {

  /** Why results cannot be made durable now (the worker is then not ready); empty if they can. */
  default Optional<String> diskProblem() {
    return Optional.empty();
  }
}
