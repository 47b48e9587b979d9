package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.plugin.TestPlugins;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.realrt.RealRuntime;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code bin/phrony-worker run} against plugins that try to take the process down: out of memory
 * ends it with status 3 instead of leaving a zombie on the stream, and a plugin's {@code
 * System.exit} with status 9 naming the plugin, not with the status it picked.
 */
class ProcessGuardIT {
  @TempDir Path tmp;

  private DistProcess worker(LocalRuntime rt, Path plugins, String id) throws Exception {
    DistProcess w = start(rt.target(), plugins, id);
    Await.until(
        "worker registered",
        () -> rt.worker(id).filter(v -> v.connected()).isPresent(),
        DistProcess.DEADLINE);
    return w;
  }

  /** {@code run} against the runtime at {@code target}, with a small heap. */
  private DistProcess start(String target, Path plugins, String id) throws Exception {
    return DistProcess.start(
        tmp,
        Map.of("PHRONY_RUNTIME_ADDR", target, "PHRONY_WORKER_JAVA_OPTS", "-Xmx96m"),
        "run",
        "--worker-id",
        id,
        "--plugins",
        plugins.toString(),
        "--http",
        "none",
        "--state-dir",
        tmp.resolve("state-" + id).toString());
  }

  @Test
  void a_plugin_that_fills_the_heap_ends_the_worker_with_status_3() throws Exception {
    Path plugins = tmp.resolve("plugins");
    new TestPlugins(tmp.resolve("build"))
        .jar()
        .handler(
            "leak.Hoard",
            TestPlugins.descriptor("leak.hoard", "1.0.0", "read_only"),
            "static final java.util.List<byte[]> KEPT = new java.util.ArrayList<>();",
            "while (true) { KEPT.add(new byte[1 << 20]); }")
        .writeTo(plugins.resolve("leak.jar"));
    try (LocalRuntime rt = LocalRuntime.builder().port(0).start();
        DistProcess w = worker(rt, plugins, "oom-1")) {
      rt.dispatch(Call.of("leak.hoard", "1.0.0", "{}"));
      DistProcess.Result exit = w.awaitExit(Duration.ofSeconds(60));
      assertThat(exit.exit()).as("stderr:%n%s", exit.err()).isEqualTo(3);
      assertThat(exit.err()).contains("Terminating due to java.lang.OutOfMemoryError");
      Await.until(
          "the runtime sees the stream gone",
          () -> rt.worker("oom-1").map(v -> !v.connected()).orElse(true),
          Duration.ofSeconds(30));
    }
  }

  @ParameterizedTest
  @CsvSource({"System.exit(3), System.exit", "Runtime.getRuntime().halt(0), Runtime.halt"})
  void ending_the_process_from_a_plugin_ends_the_worker_with_status_9_naming_it(
      String statement, String said) throws Exception {
    Path plugins = rogue(statement);
    try (LocalRuntime rt = LocalRuntime.builder().port(0).start();
        DistProcess w = worker(rt, plugins, "exit-1")) {
      rt.dispatch(Call.of("rogue.quit", "1.0.0", "{}"));
      DistProcess.Result exit = w.awaitExit(Duration.ofSeconds(60));
      assertThat(exit.exit()).as("stderr:%n%s", exit.err()).isEqualTo(9);
      assertThat(exit.err()).contains(said + " called by rogue.Quit.handle(");
    }
  }

  /**
   * The same against the runtime's own Work-stream code ({@link RealRuntime}; skipped when absent):
   * the exit status is the worker's alone, so this shows only that a real runtime's call reaches
   * the plugin and ends the worker the same way, with a good plugin served beside it.
   */
  @Test
  void halt_0_from_a_plugin_called_by_the_real_runtime_ends_the_worker_with_status_9()
      throws Exception {
    Path bin = RealRuntime.binary().orElse(null);
    Assumptions.assumeTrue(bin != null, RealRuntime::absent);
    Path plugins = rogue("Runtime.getRuntime().halt(0)");
    try (RealRuntime rt =
            RealRuntime.start(
                bin, tmp.resolve("realrt.log"), DistProcess.DEADLINE, "--lease-ttl", "4s");
        DistProcess w = start(rt.target(), plugins, "halt-rt")) {
      Await.until(
          "worker registered", () -> rt.hasWorkers("rogue.quit@1.0.0", 1), DistProcess.DEADLINE);
      CompletableFuture<RealRuntime.Answer> call =
          rt.dispatch(
              RealRuntime.ToolCall.of("s-halt", "rogue.quit@1.0.0", "{}").withCallId("halt-1"));
      DistProcess.Result exit = w.awaitExit(Duration.ofSeconds(60));
      System.out.printf(
          "realrt halt(0) from a plugin: exit status %d; the runtime's answer: %s%n",
          exit.exit(), call.get(60, TimeUnit.SECONDS));
      assertThat(exit.exit()).as("stderr:%n%s", exit.err()).isEqualTo(9);
      assertThat(exit.err()).contains("Runtime.halt called by rogue.Quit.handle(");
    }
  }

  /** A plugin whose one handler runs {@code statement}. */
  private Path rogue(String statement) throws Exception {
    Path plugins = tmp.resolve("plugins");
    new TestPlugins(tmp.resolve("build"))
        .jar()
        .handler(
            "rogue.Quit",
            TestPlugins.descriptor("rogue.quit", "1.0.0", "read_only"),
            "",
            statement + "; return null;")
        .writeTo(plugins.resolve("rogue.jar"));
    return plugins;
  }
}
