package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A bad file in a running worker's plugins folder, as an operator drops one: it is reported once at
 * WARN with its name and why, and never blocks the plugins moved in after it.
 */
class BrokenPluginIT {
  @TempDir Path tmp;

  @Test
  void a_corrupt_jar_is_reported_once_and_a_good_plugin_moved_in_after_it_is_served()
      throws Exception {
    Path plugins = Files.createDirectories(tmp.resolve("plugins"));
    GeneratedPlugins.copyBundled("echo", plugins);
    Path good =
        GeneratedPlugins.jar(
            tmp.resolve("build"),
            tmp.resolve("build/good.jar"),
            "gen.good",
            "good.tool",
            "1.0.0",
            4,
            "{\"from\":\"the good plugin\"}");
    try (LocalRuntime rt = LocalRuntime.builder().port(0).start();
        DistProcess worker =
            DistProcess.start(
                tmp,
                Map.of("PHRONY_RUNTIME_ADDR", rt.target()),
                "run",
                "--plugins",
                plugins.toString(),
                "--http",
                "127.0.0.1:0",
                "--state-dir",
                tmp.resolve("state").toString())) {
      int http = worker.httpPort();
      worker.until(
          "registered",
          () -> rt.workers().stream().anyMatch(w -> w.connected()),
          DistProcess.DEADLINE);

      Files.writeString(plugins.resolve("broken.jar"), "not a zip\n", StandardCharsets.UTF_8);
      worker.awaitStderr("broken.jar is not a valid jar", Duration.ofSeconds(30));
      assertThat(warnLines(worker.stderr()))
          .as("one WARN naming the file and why")
          .singleElement()
          .asString()
          .contains("broken.jar")
          .contains("rebuild it, or remove it");

      GeneratedPlugins.deployAtomically(good, plugins, "good.jar");
      worker.until(
          "good.tool@1.0.0 served",
          () -> WorkerOps.keysNow(http).contains("good.tool@1.0.0"),
          Duration.ofSeconds(30));
      Outcome o = rt.dispatch(Call.of("good.tool", "1.0.0", "{}")).get(30, TimeUnit.SECONDS);
      assertThat(o.text()).as("%s", o).contains("the good plugin");
      assertThat(warnLines(worker.stderr()))
          .as("the broken jar, still there, is not warned about at every reload")
          .hasSize(1);
      assertThat(WorkerOps.handlers(http).path("problems").toString()).contains("broken.jar");
    }
  }

  private static java.util.List<String> warnLines(String stderr) {
    return stderr
        .lines()
        .filter(l -> l.contains("level=WARN") && l.contains("broken.jar"))
        .toList();
  }
}
