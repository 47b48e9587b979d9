package dev.phrony.worker.outbox;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/** Waiting for an outbox write, for the callers that may block (tools, tests, the log's close). */
final class Futures {
  private Futures() {}

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
