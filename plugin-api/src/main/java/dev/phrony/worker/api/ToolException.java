package dev.phrony.worker.api;

import java.util.Objects;

/**
 * A tool error the model should see as {@code code: message}, e.g. {@code throw new
 * ToolException("invalid_args", "city must not be blank")}.
 *
 * <p>Codes are short snake_case words. Any other exception a handler throws becomes code {@code
 * internal} with the exception's class and message, and its stack trace goes to the log only.
 */
public class ToolException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The code for arguments that do not fit the tool. */
  public static final String INVALID_ARGS = "invalid_args";

  private final String code;

  public ToolException(String code, String message) {
    super(message);
    this.code = Objects.requireNonNull(code, "code");
  }

  public ToolException(String code, String message, Throwable cause) {
    super(message, cause);
    this.code = Objects.requireNonNull(code, "code");
  }

  /** The machine-readable error code. */
  public String code() {
    return code;
  }
}
