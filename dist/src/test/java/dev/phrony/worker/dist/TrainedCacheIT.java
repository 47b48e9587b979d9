package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The trained AOT cache the distribution ships ({@code aot/run-trained.aot}, made at package time
 * by CacheTraining): {@code run} maps it from wherever the distribution was unpacked; one made with
 * another JDK or other jars is left aside with one line, and the worker starts all the same.
 */
class TrainedCacheIT {
  private static final String[] RUN = {"run", "--plugins", "no-such-plugins"}; // exits at once

  @TempDir Path tmp;
  private Path dist;

  @BeforeEach
  void unpackedElsewhere() throws IOException {
    assumeThat(DistProcess.distDir().resolve("aot/run-trained.aot"))
        .as("a trained cache is made on JDK 25+ unless -Dphrony.aot.skip")
        .isRegularFile();
    dist = tmp.resolve("unpacked/phrony-worker");
    DistProcess.copyTree(DistProcess.distDir(), dist);
  }

  @Test
  void runMapsTheShippedCacheFromACopyOfTheDistribution() throws Exception {
    DistProcess.Result r =
        run(
            Map.of(
                "PHRONY_WORKER_JAVA_OPTS",
                "-Xlog:aot=info:stderr",
                "PHRONY_WORKER_CDS_DIR",
                tmp.resolve("archives").toString()));
    assertThat(r.exit()).as(r.err()).isEqualTo(1);
    assertThat(r.err())
        .contains("Opened AOT cache " + dist.resolve("aot/run-trained.aot"))
        .doesNotContain("AOTConfiguration recorded");
  }

  @Test
  void aCacheForAnotherJdkOrOtherJarsIsLeftAsideInOneLine() throws Exception {
    Files.writeString(dist.resolve("aot/run-trained.key"), "0\n");
    DistProcess.Result r = run(Map.of());
    assertThat(r.exit()).as(r.err()).isEqualTo(1);
    assertThat(r.err().lines())
        .as("one line on the cache, then the command's own error")
        .hasSize(2)
        .satisfies(
            lines -> {
              assertThat(lines.get(0))
                  .startsWith("phrony-worker: " + dist.resolve("aot/run-trained.aot"))
                  .contains("not used");
              assertThat(lines.get(1)).startsWith("phrony-worker run: plugins directory");
            });
  }

  private DistProcess.Result run(Map<String, String> env) throws Exception {
    try (DistProcess p = DistProcess.start(dist, tmp, env, RUN)) {
      return p.awaitExit(DistProcess.DEADLINE);
    }
  }
}
