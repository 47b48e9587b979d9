package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import dev.phrony.worker.call.CallPipeline;
import dev.phrony.worker.call.JsonCodec;
import dev.phrony.worker.ops.ReconnectReason;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.testkit.FakeScheduler;
import org.junit.jupiter.api.Test;

/**
 * {@link WorkClient#close} cuts every open stream from the caller's thread, while the registrations
 * may be opening one in the context: the session is already tracked, its gRPC call not started. The
 * cut must not fail there (it did, with a NullPointerException out of close(), in
 * TransportSecurityTest's teardown on a loaded machine); the open that follows ends on the closed
 * channel.
 */
class WorkSessionCutTest {
  @Test
  void a_cut_before_the_stream_is_open_does_nothing_and_does_not_fail() {
    FakeScheduler timers = new FakeScheduler();
    Dispatcher dispatcher =
        new Dispatcher(
            TestHandler.catalog(new AsyncDispatchTest.AsyncHandler(c -> null)),
            new MemoryOutbox(),
            new CallPipeline(new JsonCodec(), new CallPipeline.Settings(1 << 20, false)),
            timers);
    WorkSession s =
        new WorkSession(
            1,
            dispatcher.initialHandlers(),
            dispatcher,
            new WorkerIdentity("w1", "", ""),
            timers,
            WorkerMetrics.NONE,
            Runnable::run,
            Runnable::run);

    assertThatCode(() -> s.cut(ReconnectReason.ERROR, "worker stopping"))
        .doesNotThrowAnyException();
    assertThat(s.live()).as("nothing to end yet: the open that follows does").isTrue();
  }
}
