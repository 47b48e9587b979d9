package dev.phrony.worker.outbox;

import java.nio.file.Path;

/**
 * A published file of the outbox log (named as {@link LogFileFormat} says).
 *
 * @param bytes its length as the log knows it (-1 before it is read): a batch file being appended
 *     to is longer on disk, by the room preallocated after its last batch
 */
record LogFile(long seq, Path path, long bytes, boolean snapshot) {

  LogFile withBytes(long length) {
    return new LogFile(seq, path, length, snapshot);
  }
}
