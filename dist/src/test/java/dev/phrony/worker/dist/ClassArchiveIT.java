package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher's class archives: {@code run} writes none at its exit (the JVM would spend seconds
 * on it after a drain, and say so on stderr); the other commands keep a dynamic CDS archive, whose
 * making prints nothing, unless they failed to parse.
 */
class ClassArchiveIT {
  private static final String[] RUN = {"run", "--plugins", "no-such-plugins"}; // exits at once

  @TempDir Path tmp;

  @Test
  void runArchivesNothingAtItsExit() throws Exception {
    Path archives = Files.createDirectories(tmp.resolve("archives"));
    Map<String, String> env = Map.of("PHRONY_WORKER_CDS_DIR", archives.toString());
    for (int i = 0; i < 2; i++) {
      DistProcess.Result r = DistProcess.run(tmp, env, RUN);
      assertThat(r.exit()).as(r.err()).isEqualTo(1);
      assertThat(r.err().lines())
          .as("one line, the problem: no 'AOTConfiguration recorded' after it")
          .singleElement()
          .asString()
          .startsWith("phrony-worker run: plugins directory no-such-plugins");
    }
    assertThat(names(archives))
        .as("no recording or archive written at a run's exit, which would hold its end")
        .noneMatch(n -> n.startsWith("run-"));
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

  @Test
  void aCommandThatFailedToParseLeavesNoArchive() throws Exception {
    Path archives = Files.createDirectories(tmp.resolve("archives"));
    Map<String, String> env = Map.of("PHRONY_WORKER_CDS_DIR", archives.toString());
    assertThat(DistProcess.run(tmp, env, "runn").exit()).as("no such command").isEqualTo(1);
    assertThat(DistProcess.run(tmp, env, "version", "--bogus").exit()).isEqualTo(1);
    assertThat(names(archives))
        .as("an archive of parsing alone would be mapped by every later run")
        .isEmpty();
    assertThat(DistProcess.run(tmp, env, "version").exit()).isZero();
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
