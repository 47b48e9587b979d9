package dev.phrony.worker.plugin;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class ImageDigestTest {

  private static final String A = "a".repeat(64);
  private static final String B = "b".repeat(64);
  private static final String C = "c".repeat(64);

  private static PluginSource plugin(String path, String... shas) {
    return new PluginSource(
        Path.of(path),
        java.util.Arrays.stream(shas)
            .map(s -> new PluginSource.Jar(Path.of(path, s.substring(0, 1) + ".jar"), s))
            .toList());
  }

  @Test
  void is_sha256_of_the_documented_canonical_text() {
    String canonical = "host=1.2.3\n" + A + "\n" + B + "\n" + C + "\n";
    assertThat(ImageDigest.of("1.2.3", List.of(plugin("p/x", C, A), plugin("p/y.jar", B))))
        .isEqualTo("sha256:" + ImageDigest.sha256Hex(canonical.getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void ignores_plugin_order_and_paths() {
    assertThat(ImageDigest.of("1", List.of(plugin("x", A), plugin("y", B))))
        .isEqualTo(ImageDigest.of("1", List.of(plugin("renamed", B), plugin("z", A))));
  }

  @Test
  void changes_with_the_host_version_and_with_any_jar() {
    String base = ImageDigest.of("1", List.of(plugin("x", A)));
    assertThat(ImageDigest.of("2", List.of(plugin("x", A)))).isNotEqualTo(base);
    assertThat(ImageDigest.of("1", List.of(plugin("x", B)))).isNotEqualTo(base);
    assertThat(ImageDigest.of("1", List.of(plugin("x", A), plugin("y", A)))).isNotEqualTo(base);
    assertThat(ImageDigest.of("1", List.of())).startsWith("sha256:").hasSize(7 + 64);
  }
}
