package dev.phrony.worker.reload;

/**
 * A worker that will not start with the plugins it found: {@code --strict} and a plugin problem, or
 * no handler left to serve. Not a usage error: the command exits with its status for plugin
 * problems, the message (naming what to run to see them) on stderr.
 */
public final class NotStartingException extends Exception {
  private static final long serialVersionUID = 1L;

  public NotStartingException(String message) {
    super(message);
  }
}
