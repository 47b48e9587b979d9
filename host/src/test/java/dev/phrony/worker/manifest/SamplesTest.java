package dev.phrony.worker.manifest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The repository's samples/ are the product's ../shared/samples, byte for byte. */
class SamplesTest {

  @Test
  void the_repository_copies_match_the_shared_samples() throws IOException {
    Path shared = Samples.shared();
    assumeTrue(Files.isDirectory(shared), "no ../shared/samples beside the repository");
    List<Path> manifests;
    try (Stream<Path> s = Files.list(shared)) {
      manifests = s.filter(p -> p.getFileName().toString().endsWith(".yaml")).sorted().toList();
    }
    assertThat(manifests).isNotEmpty();
    for (Path original : manifests) {
      Path copy = Samples.dir().resolve(original.getFileName());
      assertThat(copy).as("copy %s from %s", copy, original).exists();
      assertThat(Files.readAllBytes(copy))
          .as("%s differs from %s: copy it again", copy, original)
          .isEqualTo(Files.readAllBytes(original));
    }
  }
}
