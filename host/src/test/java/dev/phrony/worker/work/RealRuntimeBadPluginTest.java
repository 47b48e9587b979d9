package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.plugin.LoadResult;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.realrt.RealRuntime;
import dev.phrony.worker.testkit.realrt.RealRuntime.Answer;
import dev.phrony.worker.testkit.realrt.RealRuntime.Batch;
import dev.phrony.worker.testkit.realrt.RealRuntime.ToolCall;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link BadPluginTest}'s bad plugins against the runtime's own Work-stream code ({@link
 * RealRuntime}), with the good plugin's calls sent as the runtime's executor sends them, 8 at a
 * time: every good call is answered while the bad plugin misbehaves. Prints the figures. Skips when
 * the binary is absent (a clone does not have it).
 */
class RealRuntimeBadPluginTest {
  private static final Duration START = Duration.ofSeconds(20);
  private static final int GOOD_CALLS = 400;
  private static final int CONCURRENCY = 8;

  @TempDir Path tmp;

  private RealRuntime start(Path bin) throws Exception {
    return RealRuntime.start(
        bin, tmp.resolve("realrt.log"), START, "--lease-ttl", "4s", "--recorder", "memory");
  }

  /** {@link #GOOD_CALLS} good calls; prints and returns how many were answered. */
  private static Batch good(RealRuntime rt, String phase) throws Exception {
    Batch b =
        rt.dispatchBatch(
            ToolCall.of("s-good-" + phase, BadPlugins.GOOD, "{}"),
            GOOD_CALLS,
            CONCURRENCY,
            "good-" + phase + "-",
            Duration.ofSeconds(120));
    System.out.printf(
        "realrt bad plugin, %s: good calls answered %d / %d (errors %d, dispatch errors %d %s),"
            + " p50 %.1f ms, p99 %.1f ms, max %.1f ms%n",
        phase,
        b.ok(),
        b.count(),
        b.errors(),
        b.dispatchErrors(),
        b.errorKinds(),
        b.p50Ms(),
        b.p99Ms(),
        b.maxMs());
    return b;
  }

  private static void allAnswered(Batch b) {
    assertThat(b.ok()).as("good calls answered of %d: %s", b.count(), b).isEqualTo(b.count());
  }

  @Test
  void handlers_spinning_on_every_core_leave_the_good_plugins_calls_all_answered()
      throws Exception {
    Path bin = RealRuntime.binary().orElse(null);
    Assumptions.assumeTrue(bin != null, RealRuntime::absent);
    LoadResult loaded = BadPlugins.load(tmp, BadPlugins.SPIN, "spin.Forever");
    System.clearProperty(BadPlugins.STOP);
    int cores = Runtime.getRuntime().availableProcessors();
    String spin = "spin.forever@1.0.0";
    try (RealRuntime rt = start(bin);
        WorkClient client =
            new WorkClient(
                WorkOptions.defaults(rt.target(), new WorkerIdentity("w-spin", "", "")),
                loaded.catalog(),
                new MemoryOutbox())) {
      client.start();
      Await.until("registered", () -> rt.hasWorkers(BadPlugins.GOOD, 1), START);
      List<CompletableFuture<Answer>> spins = new ArrayList<>();
      for (int i = 0; i < cores; i++) {
        spins.add(
            rt.dispatch(
                ToolCall.of("s-spin", spin, "{}").withCallId("spin-" + i).withTimeoutMs(55_000)));
      }
      Await.until(
          "a spinning call on every core",
          () -> client.dispatcher().busy(spin) == cores,
          Duration.ofSeconds(20));

      allAnswered(good(rt, "while " + cores + " calls spin"));
      assertThat(client.dispatcher().busy(spin)).as("spinning all along").isEqualTo(cores);
      assertThat(client.reconnects()).as("heartbeats went on").isZero();

      // Cancelled, they spin on as runaways: the worker leaves routing until they end.
      rt.cancelSession("s-spin", "registry").get(30, TimeUnit.SECONDS);
      for (CompletableFuture<Answer> s : spins) {
        assertThat(s.get(30, TimeUnit.SECONDS).ok()).isFalse();
      }
      Await.until("out of routing", () -> !client.readiness().ready(), Duration.ofSeconds(20));
      // The runtime's side of it: once the held heartbeats let the lease lapse, it routes no call
      // here (a call given 300 ms to find a worker is refused).
      long[] probes = {0};
      boolean refused =
          Await.holds(
              () ->
                  !rt.dispatch(
                          ToolCall.of("s-probe", BadPlugins.GOOD, "{}")
                              .withCallId("probe-" + probes[0]++)
                              .withTimeoutMs(300))
                      .orTimeout(30, TimeUnit.SECONDS)
                      .join()
                      .ok(),
              Duration.ofSeconds(12),
              Duration.ofMillis(250));
      System.out.printf(
          "realrt bad plugin, out of routing (heartbeats held): the runtime %s%n",
          refused
              ? "refused a good call after " + probes[0] + " probes"
              : "still routed good calls here 12 s later (" + probes[0] + " probes answered)");
      assertThat(refused).as("the runtime stopped routing to a worker out of routing").isTrue();

      System.setProperty(BadPlugins.STOP, "true");
      Await.until("back in routing", () -> client.readiness().ready(), Duration.ofSeconds(20));
      allAnswered(good(rt, "after the runaways ended"));
      assertThat(client.reconnects()).as("the same stream all along").isZero();
    } finally {
      System.setProperty(BadPlugins.STOP, "true"); // never leave them spinning
    }
  }

  @Test
  void a_handle_async_that_blocks_leaves_the_good_calls_all_answered_and_a_drain_finishes()
      throws Exception {
    Path bin = RealRuntime.binary().orElse(null);
    Assumptions.assumeTrue(bin != null, RealRuntime::absent);
    LoadResult loaded = BadPlugins.load(tmp, BadPlugins.BLOCKING_START, "stuck.Start");
    String stuck = "stuck.start@1.0.0";
    try (RealRuntime rt = start(bin);
        WorkClient client =
            new WorkClient(
                WorkOptions.defaults(rt.target(), new WorkerIdentity("w-stuck", "", ""))
                    .withDrainTimeout(Duration.ofSeconds(2)),
                loaded.catalog(),
                new MemoryOutbox())) {
      client.start();
      Await.until("registered", () -> rt.hasWorkers(BadPlugins.GOOD, 1), START);

      CompletableFuture<Answer> first =
          rt.dispatch(ToolCall.of("s-stuck", stuck, "{}").withCallId("stuck-1"));
      Await.until("the first stuck start runs", () -> client.dispatcher().busy(stuck) == 1, START);
      allAnswered(good(rt, "behind a blocked handleAsync"));
      Answer firstAnswer = first.get(30, TimeUnit.SECONDS);
      System.out.println("realrt bad plugin, the blocked start: " + firstAnswer);
      assertThat(firstAnswer.ok()).as("the stuck call answers for itself").isFalse();

      // Later starts of that handler block threads of their own, not the stream's.
      CompletableFuture<Answer> again =
          rt.dispatch(
              ToolCall.of("s-stuck", stuck, "{}").withCallId("stuck-2").withTimeoutMs(50_000));
      Await.until("the second stuck call runs", () -> client.dispatcher().busy(stuck) == 1, START);
      allAnswered(good(rt, "beside a blocked call on a thread of its own"));
      assertThat(client.reconnects()).as("the lease held: heartbeats went on").isZero();

      long t0 = System.nanoTime();
      CompletableFuture<Void> drained = BadPlugins.drain(client);
      drained.get(30, TimeUnit.SECONDS);
      System.out.printf(
          "realrt bad plugin, drain with a blocked call: %d ms; the blocked call: %s%n",
          (System.nanoTime() - t0) / 1_000_000, again.get(30, TimeUnit.SECONDS));
    }
  }
}
