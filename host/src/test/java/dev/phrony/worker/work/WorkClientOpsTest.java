package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.ops.MicrometerMetrics;
import dev.phrony.worker.ops.Readiness;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import io.micrometer.core.instrument.Counter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Readiness and the stream's meters over real gRPC against a {@link LocalRuntime}. */
class WorkClientOpsTest {
  private static final Duration WAIT = Duration.ofSeconds(20);

  private final PrometheusMeterRegistry registry =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final MicrometerMetrics metrics = new MicrometerMetrics(registry);
  private LocalRuntime rt;
  private WorkClient client;

  @AfterEach
  void tearDown() {
    if (client != null) {
      client.close();
    }
    if (rt != null) {
      rt.close();
    }
    metrics.close();
    registry.close();
  }

  private double reconnects() {
    return registry.find(MicrometerMetrics.RECONNECTS).counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  @Test
  void ready_only_while_registered_and_not_draining_with_the_reason_otherwise() throws Exception {
    rt =
        LocalRuntime.builder()
            .port(0)
            .leaseTtl(Duration.ofMillis(2_000))
            .shutdownGrace(Duration.ofMillis(200))
            .start();
    TestHandler echo = TestHandler.of("echo", 4, call -> ToolResult.json(call.argsBytes()));
    WorkOptions options =
        WorkOptions.defaults(rt.target(), new WorkerIdentity("w1", "", ""))
            .withBackoff(Duration.ofMillis(20), Duration.ofMillis(100))
            .withDrainTimeout(Duration.ofSeconds(5));
    client =
        new WorkClient(
            options,
            TestHandler.catalog(echo),
            new MemoryOutbox(),
            null,
            bound -> bound / 2,
            metrics);
    metrics.bindRegistered(client::registered);

    assertThat(client.readiness())
        .isEqualTo(Readiness.notReady("not registered with the runtime at " + rt.target()));
    assertThat(registry.get(MicrometerMetrics.REGISTERED).gauge().value()).isZero();

    client.start();
    Await.until("ready", () -> client.readiness().ready(), WAIT);
    assertThat(registry.get(MicrometerMetrics.REGISTERED).gauge().value()).isEqualTo(1);
    Outcome o = rt.dispatch(Call.of("echo", "1.0.0", "{\"a\":1}")).get(20, TimeUnit.SECONDS);
    assertThat(o.text()).isEqualTo("{\"a\":1}");
    Await.until(
        "a heartbeat round trip",
        () -> registry.get(MicrometerMetrics.HEARTBEAT_ROUND_TRIP).timer().count() >= 1,
        WAIT);

    rt.crash();
    Await.until("not ready once the runtime is gone", () -> !client.readiness().ready(), WAIT);
    Await.until("a reconnect counted", () -> reconnects() >= 1, WAIT);
    assertThat(client.readiness().reason())
        .startsWith("not registered with the runtime at " + rt.target() + " (last stream ended: ");

    rt.start();
    Await.until("ready again", () -> client.readiness().ready(), WAIT);

    Thread drain =
        Thread.ofVirtual()
            .start(
                () -> {
                  try {
                    client.drain();
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                });
    Await.until(
        "draining", () -> client.readiness().reason().equals("draining for shutdown"), WAIT);
    assertThat(client.readiness().ready()).isFalse();
    drain.join(WAIT.toMillis());
  }

  @Test
  void not_ready_while_the_outbox_cannot_write_and_ready_again_once_it_can(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    rt = LocalRuntime.builder().port(0).start();
    TestHandler echo = TestHandler.of("echo", 4, call -> ToolResult.json(call.argsBytes()));
    try (var sd = dev.phrony.worker.state.StateDir.open(dir);
        var outbox =
            dev.phrony.worker.outbox.DurableOutbox.open(
                sd,
                dev.phrony.worker.outbox.DurableOutbox.Options.defaults()
                    .withDurability(dev.phrony.worker.outbox.Durability.ALL))) {
      metrics.bindOutbox(outbox);
      client =
          new WorkClient(
              WorkOptions.defaults(rt.target(), new WorkerIdentity("w1", "", "")),
              TestHandler.catalog(echo),
              outbox,
              null,
              bound -> bound / 2,
              metrics);
      client.start();
      Await.until("ready", () -> client.readiness().ready(), WAIT);
      java.nio.file.Path outboxDir = dir.resolve("outbox");
      java.nio.file.Files.delete(outboxDir);
      java.nio.file.Files.writeString(outboxDir, "a file where the folder was: writes fail");

      var pending = rt.dispatch(Call.of("echo", "1.0.0", "{\"a\":1}"));
      Await.until("not ready", () -> !client.readiness().ready(), WAIT);
      assertThat(client.readiness().reason()).startsWith("the outbox cannot write its results");
      assertThat(pending).as("nothing un-persisted is sent").isNotDone();
      assertThat(registry.get(MicrometerMetrics.OUTBOX_WAITING_FOR_DISK).gauge().value())
          .isEqualTo(1);
      assertThat(
              registry.get(MicrometerMetrics.OUTBOX_DURABILITY_FAILURES).functionCounter().count())
          .isPositive();

      java.nio.file.Files.delete(outboxDir);
      java.nio.file.Files.createDirectory(outboxDir);
      assertThat(pending.get(20, TimeUnit.SECONDS).text()).isEqualTo("{\"a\":1}");
      Await.until("ready again", () -> client.readiness().ready(), WAIT);
      client.close();
      client = null;
    }
  }

  @Test
  void handlers_that_outlive_their_cancel_are_counted_and_make_the_worker_not_ready_above_the_cap()
      throws Exception {
    rt = LocalRuntime.builder().port(0).start();
    java.util.concurrent.CountDownLatch letGo = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
    TestHandler stubborn =
        TestHandler.of(
            "stubborn",
            4,
            call -> {
              started.countDown();
              while (letGo.getCount() > 0) {
                try {
                  letGo.await();
                } catch (InterruptedException ignored) {
                  // the defect under test: a handler that swallows the cancel
                }
              }
              return ToolResult.json("{}");
            });
    client =
        new WorkClient(
            WorkOptions.defaults(rt.target(), new WorkerIdentity("w1", "", "")).withMaxRunaway(0),
            TestHandler.catalog(stubborn),
            new MemoryOutbox(),
            null,
            bound -> bound / 2,
            metrics);
    metrics.bindRunaway(client.dispatcher()::runningApart);
    client.start();
    Await.until("ready", () -> client.readiness().ready(), WAIT);
    try {
      var call = rt.dispatch(Call.of("c-1", "s-1", "stubborn", "1.0.0", "{}"));
      assertThat(started.await(20, TimeUnit.SECONDS)).as("the handler runs").isTrue();
      rt.cancelSession("s-1");
      call.get(20, TimeUnit.SECONDS);
      Await.until(
          "counted as a runaway",
          () -> registry.get(MicrometerMetrics.HANDLERS_RUNAWAY).gauge().value() == 1,
          WAIT);
      assertThat(client.readiness().ready()).isFalse();
      assertThat(client.readiness().reason())
          .startsWith("1 handlers still run after their call" + " was cancelled or timed out");
    } finally {
      letGo.countDown();
    }
    Await.until("ready once it returns", () -> client.readiness().ready(), WAIT);
    assertThat(registry.get(MicrometerMetrics.HANDLERS_RUNAWAY).gauge().value()).isZero();
  }
}
