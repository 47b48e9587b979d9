package dev.phrony.worker.plugin;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * One plugin found in the plugins directory: a jar, or a folder of jars, and what its jars hash to.
 * Recorded for every plugin whose files could be read, loaded or not, because the image digest
 * describes what is deployed.
 *
 * @param path the plugin's jar or folder
 * @param jars its jars, in classpath order (for a folder: its own jars, then {@code lib/*.jar})
 */
public record PluginSource(Path path, List<Jar> jars) {

  public PluginSource {
    Objects.requireNonNull(path, "path");
    jars = List.copyOf(jars);
  }

  /**
   * One jar of a plugin.
   *
   * @param path where it is
   * @param sha256 lower-case hex SHA-256 of the file's bytes
   */
  public record Jar(Path path, String sha256) {
    public Jar {
      Objects.requireNonNull(path, "path");
      Objects.requireNonNull(sha256, "sha256");
    }
  }
}
