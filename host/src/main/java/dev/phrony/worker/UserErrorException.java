package dev.phrony.worker;

/**
 * A problem the user can fix (a path, a flag, a file), as opposed to a bug. The CLI prints the
 * message as one line on stderr, without a stack trace, and exits with status 1, so the message
 * must name what is wrong and how to fix it.
 */
public class UserErrorException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public UserErrorException(String message) {
    super(message);
  }

  public UserErrorException(String message, Throwable cause) {
    super(message, cause);
  }
}
