package dev.phrony.worker.work;

import dev.phrony.worker.call.CallPipeline;
import dev.phrony.worker.call.JsonCodec;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.outbox.ResultOutbox;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.time.Scheduler;

/** Dispatchers for tests: the host's own pipeline with a chosen result limit. */
final class TestDispatchers {
  private TestDispatchers() {}

  static Dispatcher of(HandlerCatalog catalog, ResultOutbox outbox, Scheduler scheduler,
      int maxResultBytes, WorkerMetrics metrics) {
    return new Dispatcher(catalog, outbox, new CallPipeline(new JsonCodec(),
        new CallPipeline.Settings(maxResultBytes, false)), scheduler, metrics);
  }

  static Dispatcher of(HandlerCatalog catalog, ResultOutbox outbox, Scheduler scheduler) {
    return of(catalog, outbox, scheduler, 1 << 20, WorkerMetrics.NONE);
  }
}
