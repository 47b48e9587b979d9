package dev.phrony.worker.contract;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The bundles under {@code host/src/test/resources/bundles/}, in the runtime's layout: {@code desk}
 * (every binding served by handlers like the bundled plugins), {@code drift} (one binding per way a
 * manifest and a worker disagree) and {@code bundle} (a {@code kind: Bundle} with a member agent in
 * its own folder). Tests run in a module folder, so they are found from there.
 */
public final class Fixtures {
  private Fixtures() {}

  /** The folder of all fixture bundles, absolute. */
  public static Path dir() {
    for (Path p :
        new Path[] {
          Path.of("src", "test", "resources", "bundles"),
          Path.of("..", "host", "src", "test", "resources", "bundles")
        }) {
      if (Files.isDirectory(p)) {
        return p.toAbsolutePath().normalize();
      }
    }
    throw new IllegalStateException(
        "fixture bundles not found: tests run in a module folder of the repository");
  }

  public static Path desk() {
    return dir().resolve("desk/agent.yaml");
  }

  public static Path drift() {
    return dir().resolve("drift/agent.yaml");
  }

  public static Path bundle() {
    return dir().resolve("bundle/bundle.yaml");
  }
}
