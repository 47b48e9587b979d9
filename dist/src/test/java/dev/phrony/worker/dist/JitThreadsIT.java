package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher gives {@code run} 6 JIT compiler threads on a machine of 4 CPUs or fewer (the JVM
 * would start 2 on 2 CPUs, whose one C2 thread fell seconds behind during the warm-up); an
 * operator's own count in PHRONY_WORKER_JAVA_OPTS wins, and the short commands keep the JVM's.
 */
class JitThreadsIT {
  private static final String[] RUN = {"run", "--plugins", "no-such-plugins"}; // exits at once

  @TempDir Path tmp;

  @Test
  void runHasSixCompilerThreadsOnFewCpus() throws Exception {
    assumeThat(nproc()).as("CPUs on this machine").isLessThanOrEqualTo(4);
    assertThat(compilerCount("-XX:+PrintFlagsFinal", RUN)).isEqualTo("6 {command line}");
  }

  @Test
  void anOperatorsOwnCountWins() throws Exception {
    assertThat(compilerCount("-XX:CICompilerCount=3 -XX:+PrintFlagsFinal", RUN))
        .isEqualTo("3 {command line}");
  }

  @Test
  void theShortCommandsKeepTheJvmsOwnCount() throws Exception {
    assertThat(compilerCount("-XX:+PrintFlagsFinal", "version")).endsWith("{ergonomic}");
  }

  /** The JVM's CICompilerCount and where it came from, as -XX:+PrintFlagsFinal shows them. */
  private String compilerCount(String javaOpts, String... args) throws Exception {
    DistProcess.Result r;
    try (DistProcess p =
        DistProcess.start(
            tmp,
            Map.of(
                "PHRONY_WORKER_JAVA_OPTS",
                javaOpts,
                "PHRONY_WORKER_CDS_DIR",
                tmp.resolve("archives").toString()),
            args)) {
      r = p.awaitExit(DistProcess.DEADLINE);
    }
    return r.err() // the launcher's -XX:+DisplayVMOutputToStderr
        .lines()
        .filter(l -> l.matches("\\s*intx CICompilerCount\\s+=.*"))
        .map(l -> l.replaceAll(".*=\\s*(\\d+)\\s+\\{product\\}\\s+(\\{[^}]+\\}).*", "$1 $2"))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no CICompilerCount in:\n" + r.out() + r.err()));
  }

  private static int nproc() throws Exception {
    Process p = new ProcessBuilder("nproc").start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    p.waitFor();
    return Integer.parseInt(out);
  }
}
