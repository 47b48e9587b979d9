package dev.phrony.worker.dev;

import dev.phrony.worker.UserErrorException;

/**
 * {@code phrony-worker dev} refused a request as malformed (a 4xx answer); the message is its
 * explanation. A user error: the request must change.
 */
public final class ControlRequestException extends UserErrorException {
  private static final long serialVersionUID = 1L;

  private final int status;
  private final String code;

  public ControlRequestException(int status, String code, String message) {
    super(message);
    this.status = status;
    this.code = code;
  }

  /** The HTTP status. */
  public int status() {
    return status;
  }

  /** The error code of the answer, e.g. {@code bad_request}. */
  public String code() {
    return code;
  }
}
