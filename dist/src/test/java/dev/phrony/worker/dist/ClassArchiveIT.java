package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.phrony.worker.testkit.Await;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher's class archives: {@code run} on JDK 25+ gets an AOT cache (a first run records, the
 * next launch assembles the cache in the background, the runs after it map it whole); the other
 * commands keep a dynamic CDS archive, whose making prints nothing.
 */
class ClassArchiveIT {
  private static final String[] RUN = {"run", "--plugins", "no-such-plugins"}; // exits at once

  @TempDir Path tmp;

  @Test
  void runRecordsThenAssemblesThenMapsItsCache() throws Exception {
    assumeTrue(Runtime.version().feature() >= 25, "AOT caches need JDK 25");
    Path archives = Files.createDirectories(tmp.resolve("archives"));
    Map<String, String> env = Map.of("PHRONY_WORKER_CDS_DIR", archives.toString());

    DistProcess.Result first = DistProcess.run(tmp, env, RUN);
    assertThat(first.exit()).as(first.err()).isEqualTo(1);
    String problem = first.err().lines().findFirst().orElseThrow();
    assertThat(problem).startsWith("phrony-worker run: plugins directory no-such-plugins");
    assertThat(names(archives)).singleElement().asString().matches("run-\\d+\\.rec\\.\\d+");

    DistProcess.Result second = DistProcess.run(tmp, env, RUN); // starts the assembly
    assertThat(second.err().lines()).containsExactly(problem); // no recording this time
    Await.until(
        "the cache assembled",
        () -> names(archives).stream().anyMatch(n -> n.matches("run-\\d+\\.aot")),
        Duration.ofSeconds(60));
    Await.until(
        "nothing left of the assembly", () -> names(archives).size() == 1, Duration.ofSeconds(10));

    Path log = tmp.resolve("aot.log");
    DistProcess.Result third =
        DistProcess.run(
            tmp,
            Map.of(
                "PHRONY_WORKER_CDS_DIR",
                archives.toString(),
                "PHRONY_WORKER_JAVA_OPTS",
                "-Xlog:aot*=info:file=" + log),
            RUN);
    assertThat(third.err().lines()).containsExactly(problem);
    // Mapped with its module graph: a cache assembled with other module options is mapped
    // without it ("Disabling optimized module handling"), which loses most of the gain.
    assertThat(Files.readString(log))
        .contains("Opened AOT cache")
        .doesNotContain("[error]")
        .doesNotContain("Disabling optimized module handling");
  }

  @Test
  void otherCommandsKeepASilentDynamicArchive() throws Exception {
    Path archives = Files.createDirectories(tmp.resolve("archives"));
    Map<String, String> env = Map.of("PHRONY_WORKER_CDS_DIR", archives.toString());
    for (int i = 0; i < 2; i++) {
      DistProcess.Result r = DistProcess.run(tmp, env, "version");
      assertThat(r.exit()).isZero();
      assertThat(r.out()).startsWith("phrony-worker ").hasLineCount(1);
      assertThat(r.err()).isEmpty();
    }
    assertThat(names(archives)).singleElement().asString().matches("version-\\d+\\.jsa");
  }

  private static List<String> names(Path dir) {
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).toList();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
