package dev.phrony.worker.manifest;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The shared sample manifests, {@code ../shared/samples} beside the repository. Tests run in a
 * module folder ({@code host/}, {@code dist/}), so that is {@code ../../shared/samples} from
 * there.
 */
public final class Samples {
  private Samples() {}

  /** The samples folder, absolute. */
  public static Path dir() {
    Path dir = Path.of("..", "..", "shared", "samples").toAbsolutePath().normalize();
    if (!Files.isDirectory(dir)) {
      throw new IllegalStateException("sample manifests not found at " + dir + ": the tests "
          + "expect the shared/ folder beside the repository (../shared from its root)");
    }
    return dir;
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
