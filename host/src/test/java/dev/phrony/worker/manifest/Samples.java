package dev.phrony.worker.manifest;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The sample manifests in the repository's {@code samples/} (copies of {@code ../shared/samples},
 * see {@code SamplesTest}). Tests run in a module folder ({@code host/}, {@code dist/}), so that is
 * {@code ../samples} from there.
 */
public final class Samples {
  private Samples() {}

  /** The samples folder, absolute. */
  public static Path dir() {
    Path dir = Path.of("..", "samples").toAbsolutePath().normalize();
    if (!Files.isDirectory(dir)) {
      throw new IllegalStateException(
          "sample manifests not found at "
              + dir
              + ": the tests "
              + "run in a module folder of the repository and read its samples/ folder");
    }
    return dir;
  }

  /** The product's originals, {@code ../shared/samples} beside the repository, if present. */
  public static Path shared() {
    return Path.of("..", "..", "shared", "samples").toAbsolutePath().normalize();
  }

  /** Every worker-routed binding served by the stock plugins. */
  public static Path weather() {
    return dir().resolve("agent-weather.yaml");
  }

  /** A missing version, a class mismatch, an MCP binding, an unserved unversioned binding. */
  public static Path mismatch() {
    return dir().resolve("agent-mismatch.yaml");
  }
}
