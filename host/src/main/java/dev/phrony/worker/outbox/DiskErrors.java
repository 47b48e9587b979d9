package dev.phrony.worker.outbox;

import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;

/**
 * Why a write to the state dir failed, in the operating system's words ({@code No space left on
 * device}, {@code Permission denied}) and without a host path: fit for a message the model reads.
 */
public final class DiskErrors {
  private DiskErrors() {}

  public static String reason(Throwable e) {
    if (e instanceof AccessDeniedException) {
      return "Permission denied";
    }
    if (e instanceof NoSuchFileException) {
      return "No such file or directory";
    }
    if (e instanceof NotDirectoryException) {
      return "Not a directory";
    }
    if (e instanceof FileSystemException fse) {
      return fse.getReason() != null ? fse.getReason() : "file system error";
    }
    String m = e.getMessage();
    if (m == null || m.isBlank()) {
      return e.getClass().getSimpleName();
    }
    // Java's own messages sometimes carry the path; the model must not see the host's layout.
    return m.replaceAll("(/[^\\s:,;()]+)+", "<path>");
  }
}
