package dev.phrony.worker.dev;

/**
 * No {@code phrony-worker dev} answers at the control address (nothing listens there, something
 * else does, it is shutting down, or it gave no answer in time). The message says what happened and
 * how to start one; the CLI prints it as one line and exits 6.
 */
public final class ControlUnreachableException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public ControlUnreachableException(String message) {
    super(message);
  }
}
