package dev.phrony.worker.plugin;

import dev.phrony.worker.UserErrorException;
import java.nio.file.Path;

/**
 * The plugins directory is missing, not a directory, or cannot be listed. Unlike a broken plugin,
 * which is reported as a {@link LoadProblem} while the others load, nothing can be loaded at all,
 * so this is a user error.
 */
public final class PluginDirectoryException extends UserErrorException {
  private static final long serialVersionUID = 1L;

  private final transient Path directory;

  PluginDirectoryException(Path directory, String message, Throwable cause) {
    super(message, cause);
    this.directory = directory;
  }

  /** The plugins directory that could not be used. */
  public Path directory() {
    return directory;
  }
}
