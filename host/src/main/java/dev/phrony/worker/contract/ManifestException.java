package dev.phrony.worker.contract;

import dev.phrony.worker.UserErrorException;
import java.nio.file.Path;
import java.util.OptionalInt;

/**
 * An agent manifest that cannot be read: missing, unreadable, not YAML, or without what a check
 * needs. The message names the file and, when there is one, the line.
 */
public final class ManifestException extends UserErrorException {
  private static final long serialVersionUID = 1L;

  private final transient Path file;
  private final int line;

  ManifestException(Path file, int line, String message, Throwable cause) {
    super(message, cause);
    this.file = file;
    this.line = line;
  }

  /** The manifest file. */
  public Path file() {
    return file;
  }

  /** The line the problem is on, from 1, when it is about a place in the file. */
  public OptionalInt line() {
    return line > 0 ? OptionalInt.of(line) : OptionalInt.empty();
  }
}
