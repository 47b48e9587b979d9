package dev.phrony.worker.state;

import java.io.IOException;
import java.nio.file.Path;
import java.util.OptionalLong;

/** The state dir is locked by another worker process (or already opened in this one). */
public final class StateDirLockedException extends IOException {
  private static final long serialVersionUID = 1L;

  private final transient Path dir;
  private final long holderPid;

  StateDirLockedException(Path dir, OptionalLong holderPid, String message) {
    super(message);
    this.dir = dir;
    this.holderPid = holderPid.orElse(-1);
  }

  /** The locked state dir. */
  public Path dir() {
    return dir;
  }

  /** The pid written by the holder, when it could be read. */
  public OptionalLong holderPid() {
    return holderPid < 0 ? OptionalLong.empty() : OptionalLong.of(holderPid);
  }
}
