package dev.phrony.worker.work;

import dev.phrony.worker.call.CallPipeline;
import dev.phrony.worker.call.JsonCodec;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.outbox.ResultOutbox;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.time.Scheduler;
import java.util.concurrent.CompletableFuture;

/**
 * Dispatchers for tests: the host's own pipeline with a chosen result limit. The test's thread
 * plays the stream's I/O thread: an asynchronous handler's calls start inline on it.
 */
final class TestDispatchers {
  private TestDispatchers() {}

  static Dispatcher of(
      HandlerCatalog catalog,
      ResultOutbox outbox,
      Scheduler scheduler,
      int maxResultBytes,
      WorkerMetrics metrics) {
    return new Dispatcher(
        catalog,
        outbox,
        new CallPipeline(new JsonCodec(), new CallPipeline.Settings(maxResultBytes, false)),
        scheduler,
        metrics,
        () -> true,
        null);
  }

  static Dispatcher of(HandlerCatalog catalog, ResultOutbox outbox, Scheduler scheduler) {
    return of(catalog, outbox, scheduler, 1 << 20, WorkerMetrics.NONE);
  }

  /**
   * Returns once everything posted to {@code d}'s context so far has run: another thread (a
   * handler's, posting its outcome) may be draining it when the test posts an invoke.
   */
  static void settle(Dispatcher d) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    d.execute(() -> done.complete(null));
    done.join();
  }
}
