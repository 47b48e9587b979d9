package dev.phrony.worker.outbox;

import dev.phrony.worker.Count;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.function.LongSupplier;

/**
 * The room left on the outbox's disk, against what its log needs: each segment is preallocated
 * whole ({@link LogWriter.Tuning#segmentBytes}), so a disk with less free space than that is told
 * apart from a full one. The log then writes its segments unpreallocated (slower), and until there
 * is room again the worker is not ready, saying where and how much is left.
 */
public final class DiskRoom {
  private final Path dir;
  private final long segmentBytes;
  private final LongSupplier usable;

  /**
   * @param usable the bytes this process may still write on {@code dir}'s file system, or -1 when
   *     unknown
   */
  DiskRoom(Path dir, long segmentBytes, LongSupplier usable) {
    this.dir = dir;
    this.segmentBytes = segmentBytes;
    this.usable = usable;
  }

  /** The usable space of {@code dir}'s file system, as the operating system counts it now. */
  static LongSupplier usableSpaceOf(Path dir) {
    return () -> {
      try {
        return Files.getFileStore(dir).getUsableSpace();
      } catch (IOException e) {
        return -1;
      }
    };
  }

  /** Bytes free on the outbox's disk for this process, or -1 when it cannot be told. */
  public long freeBytes() {
    return usable.getAsLong();
  }

  /** Whether a whole segment can be preallocated (true when the free space is not known). */
  boolean fitsSegment() {
    long free = freeBytes();
    return free < 0 || free >= segmentBytes;
  }

  /** Why the disk is too small for the outbox now, naming it and what is left; else empty. */
  public Optional<String> problem() {
    long free = freeBytes();
    if (free < 0 || free >= segmentBytes || segmentBytes < LogWriter.PREALLOCATE_FROM) {
      return Optional.empty();
    }
    return Optional.of(
        "the outbox's disk ("
            + dir
            + ") has "
            + Count.bytes(free)
            + " free, less than one segment of its log ("
            + Count.bytes(segmentBytes)
            + "): durable results and intents are written unpreallocated, and fail once it is"
            + " full; free space on it, or move the state dir (--state-dir)");
  }
}
