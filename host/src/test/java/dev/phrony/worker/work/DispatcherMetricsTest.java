package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.api.ToolException;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.ops.MicrometerMetrics;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.FakeScheduler;
import io.micrometer.core.instrument.Counter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** What the dispatcher counts, through {@link MicrometerMetrics} into a Prometheus registry. */
class DispatcherMetricsTest {
  private final FakeScheduler timers = new FakeScheduler();
  private final PrometheusMeterRegistry registry =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final MicrometerMetrics metrics = new MicrometerMetrics(registry);
  private final FakeSink sink = new FakeSink();
  private final CountDownLatch release = new CountDownLatch(1);

  @AfterEach
  void tearDown() {
    release.countDown();
    metrics.close();
    registry.close();
  }

  private double count(String tool, String outcome, String code) {
    Counter c =
        registry
            .find(MicrometerMetrics.INVOCATIONS)
            .tags("tool", tool, "outcome", outcome, "code", code)
            .counter();
    return c == null ? -1 : c.count();
  }

  private double ratio() {
    return registry.get(MicrometerMetrics.SLOTS_IN_USE_RATIO).gauge().value();
  }

  private double gauge(String name, String tool) {
    return registry.get(name).tag("tool", tool).gauge().value();
  }

  @Test
  void outcomes_slots_and_handler_time_are_counted_per_tool_at_version() throws Exception {
    TestHandler ok = TestHandler.of("ok", 4, call -> ToolResult.json("{}"));
    TestHandler fail =
        TestHandler.of(
            "fail",
            4,
            call -> {
              throw new ToolException("not_today", "no");
            });
    TestHandler block =
        TestHandler.of(
            "block",
            2,
            call -> {
              release.await();
              return ToolResult.json("{}");
            });
    Dispatcher d =
        TestDispatchers.of(
            TestHandler.catalog(ok, fail, block), new MemoryOutbox(), timers, 1 << 20, metrics);

    d.onInvoke(TestInvokes.invoke("c1", "ok", "{}"), sink);
    sink.next();
    d.onInvoke(TestInvokes.invoke("c2", "fail", "{}"), sink);
    sink.next();
    d.onInvoke(TestInvokes.invoke("c3", "ok", "not json"), sink);
    sink.next();
    d.onInvoke(TestInvokes.invoke("c4", "nope", "{}"), sink);
    sink.next();
    d.onInvoke(TestInvokes.invoke("b1", "block", "{}"), sink);
    d.onInvoke(TestInvokes.invoke("b2", "block", "{}"), sink);
    d.onInvoke(TestInvokes.invoke("b3", "block", "{}"), sink);
    TestDispatchers.settle(d);
    timers.advance(Dispatcher.SLOT_GRACE); // no slot came back in time
    sink.next(); // b3: capacity_exhausted

    assertThat(count("ok@1.0.0", "result", "")).isEqualTo(1);
    assertThat(count("fail@1.0.0", "tool_error", "")).isEqualTo(1);
    assertThat(count("ok@1.0.0", "nack", "invalid_args")).isEqualTo(1);
    assertThat(count("unknown", "nack", "unknown_tool")).isEqualTo(1);
    assertThat(count("block@1.0.0", "nack", "capacity_exhausted")).isEqualTo(1);
    assertThat(gauge(MicrometerMetrics.SLOTS_IN_USE, "block@1.0.0")).isEqualTo(2);
    assertThat(gauge(MicrometerMetrics.SLOTS_MAX, "block@1.0.0")).isEqualTo(2);
    // The worker-wide ratio the autoscaler reads: 2 of 4 + 4 + 2 slots.
    assertThat(ratio()).isEqualTo(0.2);

    d.onCancel("b1", sink);
    TestDispatchers.settle(d);
    assertThat(count("block@1.0.0", "cancelled", "")).isEqualTo(1);
    assertThat(ratio()).isEqualTo(0.1);
    assertThat(gauge(MicrometerMetrics.SLOTS_IN_USE, "block@1.0.0")).isEqualTo(1);
    d.startDraining();
    d.onInvoke(TestInvokes.invoke("b4", "block", "{}"), sink);
    TestDispatchers.settle(d);
    assertThat(count("block@1.0.0", "nack", "draining")).isEqualTo(1);
    release.countDown();
    Await.until("b2 answered", () -> count("block@1.0.0", "result", "") == 1);

    assertThat(
            registry
                .get(MicrometerMetrics.HANDLER_DURATION)
                .tag("tool", "ok@1.0.0")
                .timer()
                .count())
        .isEqualTo(1);
    // Invalid args never reached the handler: only the result was timed.
    String scrape = registry.scrape();
    assertThat(scrape)
        .contains(
            "phrony_worker_invocations_total{code=\"\",outcome=\"result\",tool=\"ok@1.0.0\"} 1")
        .contains("phrony_worker_handler_duration_seconds_bucket{tool=\"ok@1.0.0\",le=\"0.005\"}")
        .containsPattern("(?m)^phrony_worker_slots_in_use_ratio 0\\.0$")
        .contains("phrony_worker_slots_max{tool=\"block@1.0.0\"} 2")
        .contains("jvm_memory_used_bytes")
        .contains("jvm_threads_live_threads")
        .contains("process_cpu_usage")
        .doesNotContain("c1")
        .doesNotContain("s1");
  }

  @Test
  void a_passed_deadline_counts_as_deadline_exceeded() throws Exception {
    TestHandler block =
        TestHandler.of(
            "block",
            1,
            call -> {
              release.await();
              return ToolResult.json("{}");
            });
    Dispatcher d =
        TestDispatchers.of(
            TestHandler.catalog(block), new MemoryOutbox(), timers, 1 << 20, metrics);
    d.onInvoke(TestInvokes.invoke("c1", "block", "{}", timers.clock().millis() + 10), sink);
    timers.advance(java.time.Duration.ofMillis(10));
    sink.next();
    assertThat(count("block@1.0.0", "deadline_exceeded", "")).isEqualTo(1);
    assertThat(count("block@1.0.0", "tool_error", "")).isZero();
  }
}
