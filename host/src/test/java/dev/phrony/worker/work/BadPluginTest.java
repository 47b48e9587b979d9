package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.phrony.worker.ops.MicrometerMetrics;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.plugin.LoadResult;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * A good plugin served beside a bad one, over real gRPC: what the bad one does costs its own calls
 * only. The good plugin's calls all answer, the stream keeps its lease, and a drain finishes.
 */
class BadPluginTest {
  @TempDir Path tmp;

  private static List<CompletableFuture<Outcome>> goodCalls(LocalRuntime rt, int n) {
    List<CompletableFuture<Outcome>> calls = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      calls.add(rt.dispatch(Call.of("good.hello", "1.0.0", "{}")));
    }
    return calls;
  }

  private static void allAnswered(List<CompletableFuture<Outcome>> calls) throws Exception {
    for (CompletableFuture<Outcome> c : calls) {
      Outcome o = c.get(30, TimeUnit.SECONDS);
      assertThat(o).isInstanceOf(Outcome.Result.class);
      assertThat(o.text()).isEqualTo("hello");
    }
  }

  @Test
  void
      handlers_spinning_on_every_core_starve_nothing_and_as_runaways_take_the_worker_out_of_routing()
          throws Exception {
    LoadResult loaded = BadPlugins.load(tmp, BadPlugins.SPIN, "spin.Forever");
    assertThat(loaded.problems()).isEmpty();
    System.clearProperty(BadPlugins.STOP);
    int cores = Runtime.getRuntime().availableProcessors();
    MeterRegistry meters = new SimpleMeterRegistry();
    Logger runawayLog = (Logger) LoggerFactory.getLogger(Runaways.class);
    ListAppender<ILoggingEvent> warnings = new ListAppender<>();
    warnings.start();
    runawayLog.addAppender(warnings);
    try (LocalRuntime rt = LocalRuntime.builder().port(0).leaseTtl(Duration.ofSeconds(2)).start();
        WorkClient client =
            new WorkClient(
                WorkOptions.defaults(rt.target(), new WorkerIdentity("w1", "", "")),
                loaded.catalog(),
                new MemoryOutbox(),
                new MicrometerMetrics(meters))) {
      client.start();
      Await.until("registered", client::registered);
      List<CompletableFuture<Outcome>> spins = new ArrayList<>();
      for (int i = 0; i < cores; i++) {
        spins.add(rt.dispatch(Call.of("spin-" + i, "s-spin", "spin.forever", "1.0.0", "{}")));
      }
      Await.until(
          "a spinning call on every core",
          () ->
              rt.worker("w1")
                  .map(
                      w ->
                          w.handlers().stream()
                              .anyMatch(
                                  h -> h.key().equals("spin.forever@1.0.0") && h.busy() == cores))
                  .orElse(false),
          Duration.ofSeconds(20));
      Await.until(
          "a long call's thread named after it, for a thread dump",
          () ->
              Thread.getAllStackTraces().keySet().stream()
                  .anyMatch(t -> t.getName().equals("call-spin-0")),
          Duration.ofSeconds(20));

      allAnswered(goodCalls(rt, 20));
      assertThat(client.reconnects()).as("heartbeats went on").isZero();

      // Cancelled, they spin on: runaways, named once each, and the worker leaves routing.
      rt.cancelSession("s-spin");
      Await.until(
          "each runaway named",
          () ->
              warnings.list.stream()
                      .filter(e -> e.getFormattedMessage().startsWith("runaway handler:"))
                      .count()
                  == cores,
          Duration.ofSeconds(20));
      assertThat(warnings.list)
          .filteredOn(e -> e.getFormattedMessage().startsWith("runaway handler:"))
          .allSatisfy(
              e -> {
                assertThat(e.getLevel()).isEqualTo(Level.WARN);
                assertThat(e.getFormattedMessage()).contains("spin.forever@1.0.0 call spin-");
                assertThat(e.getThrowableProxy().getStackTraceElementProxyArray())
                    .anySatisfy(f -> assertThat(f.toString()).contains("spin.Forever.handle"));
              });
      assertThat(
              meters
                  .get(MicrometerMetrics.HANDLER_RUNAWAYS)
                  .tag("tool", "spin.forever@1.0.0")
                  .counter()
                  .count())
          .isEqualTo(cores);
      Await.until("out of routing", () -> !client.readiness().ready(), Duration.ofSeconds(20));
      assertThat(client.readiness().reason()).contains("out of routing while runaway handlers");
      Await.until(
          "the runtime's lease lapsed",
          () -> rt.worker("w1").map(w -> w.leaseExpired() && w.connected()).orElse(false),
          Duration.ofSeconds(20));

      System.setProperty(BadPlugins.STOP, "true");
      Await.until("back in routing", () -> client.readiness().ready(), Duration.ofSeconds(20));
      assertThat(rt.worker("w1").map(w -> !w.leaseExpired()))
          .as("ready once the runtime renewed the lease")
          .contains(true);
      allAnswered(goodCalls(rt, 5));
      assertThat(client.reconnects()).as("the same stream all along").isZero();
    } finally {
      System.setProperty(BadPlugins.STOP, "true"); // never leave them spinning
      runawayLog.detachAppender(warnings);
    }
  }

  @Test
  void a_handle_async_that_blocks_costs_only_its_own_call() throws Exception {
    LoadResult loaded = BadPlugins.load(tmp, BadPlugins.BLOCKING_START, "stuck.Start");
    assertThat(loaded.problems()).isEmpty();
    try (LocalRuntime rt = LocalRuntime.builder().port(0).leaseTtl(Duration.ofSeconds(4)).start();
        WorkClient client =
            new WorkClient(
                WorkOptions.defaults(rt.target(), new WorkerIdentity("w1", "", ""))
                    .withDrainTimeout(Duration.ofSeconds(2)),
                loaded.catalog(),
                new MemoryOutbox())) {
      client.start();
      Await.until("registered", client::registered);
      allAnswered(goodCalls(rt, 3));

      CompletableFuture<Outcome> stuck = rt.dispatch(Call.of("stuck.start", "1.0.0", "{}"));
      List<CompletableFuture<Outcome>> behind = goodCalls(rt, 10);
      allAnswered(behind);
      assertThat(stuck.get(30, TimeUnit.SECONDS))
          .as("the stuck call answers for itself")
          .isNotInstanceOf(Outcome.Result.class);

      // Later starts of that handler block threads of their own, not the stream's.
      CompletableFuture<Outcome> again = rt.dispatch(Call.of("stuck.start", "1.0.0", "{}"));
      Await.until(
          "the second stuck call is running",
          () ->
              rt.worker("w1")
                  .map(
                      w ->
                          w.handlers().stream()
                              .anyMatch(h -> h.key().equals("stuck.start@1.0.0") && h.busy() == 1))
                  .orElse(false),
          Duration.ofSeconds(20));
      allAnswered(goodCalls(rt, 10));
      assertThat(client.reconnects()).as("the lease held: heartbeats went on").isZero();

      CompletableFuture<Void> drained = BadPlugins.drain(client);
      drained.get(30, TimeUnit.SECONDS);
      assertThat(again).isDone();
    }
  }
}
