package dev.phrony.worker.state;

import java.io.IOException;

/**
 * The directory named as the state dir is not the worker's to use: it holds other things, or
 * belongs to another user. Nothing in it was changed. A user error: the message says the fix.
 */
public final class StateDirRefusedException extends IOException {
  private static final long serialVersionUID = 1L;

  StateDirRefusedException(String message) {
    super(message);
  }
}
