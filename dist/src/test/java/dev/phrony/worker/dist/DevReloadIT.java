package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A plugin author's inner loop: {@code dev} keeps running while a build puts a plugin into its
 * plugins folder; it reloads, says what changed, and the next {@code call} reaches the new code.
 */
class DevReloadIT {
  @TempDir Path tmp;

  /** Copies a plugin folder in as a build that finishes with a rename does. */
  private static void deploy(Path plugin, Path pluginsDir) throws IOException {
    Path staged = pluginsDir.resolve("." + plugin.getFileName() + ".tmp");
    try (Stream<Path> files = Files.walk(plugin)) {
      for (Path p : (Iterable<Path>) files::iterator) {
        Path to = staged.resolve(plugin.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(to);
        } else {
          Files.copy(p, to);
        }
      }
    }
    Files.move(staged, pluginsDir.resolve(plugin.getFileName()), StandardCopyOption.ATOMIC_MOVE);
  }

  @Test
  void dev_serves_a_plugin_built_into_its_folder_without_a_restart() throws Exception {
    Path bundled = DistProcess.distDir().resolve("plugins");
    Path plugins = Files.createDirectories(tmp.resolve("plugins"));
    deploy(bundled.resolve("echo"), plugins);
    int controlPort = DistProcess.freePort();
    int runtimePort = DistProcess.freePort();
    String runtime = "127.0.0.1:" + runtimePort;
    try (DistProcess dev =
        DistProcess.start(
            tmp,
            Map.of(),
            "dev",
            "--plugins",
            plugins.toString(),
            "--port",
            String.valueOf(runtimePort),
            "--control-port",
            String.valueOf(controlPort))) {
      dev.awaitStdout("Ctrl-C stops.", DistProcess.DEADLINE);
      DistProcess.Result before =
          DistProcess.run(
              tmp,
              "call",
              "weather.get-forecast@1.0.0",
              "{\"city\":\"Oslo\"}",
              "--runtime",
              runtime);
      assertThat(before.exit()).as("not served yet; stderr: %s", before.err()).isEqualTo(5);

      deploy(bundled.resolve("weather"), plugins);
      dev.awaitStdout(
          "plugins_reloaded added=weather.get-forecast@1.0.0 replaced= removed=",
          Duration.ofSeconds(30));

      assertThat(WorkerOps.reloadLines(dev.stdout() + dev.stderr()))
          .as("the reload is shown once (the console's line), not also logged")
          .hasSize(1);

      DistProcess.Result after =
          DistProcess.run(
              tmp,
              "call",
              "weather.get-forecast@1.0.0",
              "{\"city\":\"Oslo\"}",
              "--runtime",
              runtime);
      assertThat(after.exit()).as("stderr: %s%ndev stderr: %s", after.err(), dev.stderr()).isZero();
      assertThat(after.out()).contains("\"city\": \"Oslo\"");
      DistProcess.Result echo =
          DistProcess.run(tmp, "call", "echo@default", "{\"a\":1}", "--runtime", runtime);
      assertThat(echo.exit()).as("the plugin that did not change is still served").isZero();

      dev.interrupt();
      DistProcess.Result stopped = dev.awaitExit(DistProcess.DEADLINE);
      assertThat(stopped.exit()).as("stderr:%n%s", stopped.err()).isZero();
      assertThat(List.of(stopped.err())).noneMatch(e -> e.contains("\tat "));
    }
  }
}
