package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.testkit.LocalRuntime;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a new user reads from the distribution: a typo is answered with the close match, every error
 * line names its command, counts read as English, and a stopped worker ends with its own last line.
 */
class UsageIT {
  @TempDir Path tmp;

  @Test
  void typos_of_commands_and_flags_are_answered_with_the_close_match() throws Exception {
    DistProcess.Result command = DistProcess.run(tmp, "lsit-handlers");
    assertThat(command.exit()).isEqualTo(1);
    assertThat(command.err())
        .isEqualTo(
            "phrony-worker: 'lsit-handlers' is not a command; did you mean 'list-handlers'?"
                + " (see 'phrony-worker --help')\n");

    DistProcess.Result flag = DistProcess.run(tmp, "run", "--plugns", "./plugins");
    assertThat(flag.exit()).isEqualTo(1);
    assertThat(flag.err())
        .isEqualTo(
            "phrony-worker run: unknown option '--plugns'; did you mean '--plugins'?"
                + " (see 'phrony-worker run --help')\n");
  }

  @Test
  void a_run_with_nothing_to_serve_says_which_command_refused() throws Exception {
    Path empty = Files.createDirectories(tmp.resolve("empty"));
    DistProcess.Result r =
        DistProcess.run(
            tmp,
            "run",
            "--plugins",
            empty.toString(),
            "--state-dir",
            tmp.resolve("state").toString(),
            "--http",
            "none");
    assertThat(r.exit()).as(r.err()).isEqualTo(3);
    assertThat(r.err().lines().toList())
        .as(r.err())
        .last()
        .isEqualTo(
            "phrony-worker run: no handlers to serve in " + empty + " (see 'list-handlers')");
  }

  @Test
  void one_handler_is_one_handler_and_a_stopped_worker_ends_on_its_own_last_line()
      throws Exception {
    Path plugins = Files.createDirectories(tmp.resolve("plugins"));
    GeneratedPlugins.copyBundled("echo", plugins);
    // A short lease: the drain leaves routing for one before it ends.
    try (LocalRuntime rt = LocalRuntime.builder().port(0).leaseTtl(Duration.ofSeconds(2)).start();
        DistProcess worker =
            DistProcess.start(
                tmp,
                Map.of(
                    "PHRONY_RUNTIME_ADDR",
                    rt.target(),
                    "PHRONY_WORKER_CDS_DIR",
                    tmp.resolve("cds").toString()),
                "run",
                "--plugins",
                plugins.toString(),
                "--http",
                "none",
                "--state-dir",
                tmp.resolve("state").toString())) {
      worker.awaitStderr("registered as", DistProcess.DEADLINE);
      worker.terminate();
      DistProcess.Result r = worker.awaitExit(DistProcess.DEADLINE);
      assertThat(r.exit()).as(r.err()).isZero();
      assertThat(r.err())
          .contains(" serving 1 handler from ")
          .containsPattern(": 1 handler, lease TTL")
          .doesNotContain("1 handlers");
      assertThat(r.err()).contains("msg=\"drained\"");
      assertThat(r.err().lines())
          .as("only the worker's own lines: no 'AOTConfiguration recorded' at its exit")
          .allMatch(l -> l.startsWith("ts="));
    }
  }
}
