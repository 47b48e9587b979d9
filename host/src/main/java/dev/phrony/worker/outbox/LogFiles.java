package dev.phrony.worker.outbox;

import dev.phrony.worker.state.StateDir;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The published files of the outbox log, oldest first, and the bytes they hold. A file comes into
 * place only through {@link #publish} and every device flush goes through {@link #force}, so the
 * file list, the next sequence number, the byte count and the flush count have this one owner. Used
 * by the writer thread only (and by start-up before it runs); the flush count is read anywhere.
 */
final class LogFiles implements AutoCloseable {
  private final Path dir;
  private final InstantSource clock;
  private final FileChannel dirChannel;
  private final List<LogFile> files;
  private long maxSeq;
  private long diskBytes;
  private final AtomicLong flushes = new AtomicLong();

  LogFiles(Path dir, LogReader.Loaded loaded, InstantSource clock) throws IOException {
    this.dir = dir;
    this.clock = clock;
    this.files = new ArrayList<>(loaded.files());
    this.maxSeq = loaded.maxSeq();
    this.diskBytes = files.stream().mapToLong(LogFile::bytes).sum();
    this.dirChannel = FileChannel.open(dir, StandardOpenOption.READ);
  }

  /**
   * Writes the next file of the log: as {@code .tmp}, forced, renamed into place and the directory
   * forced, so it is never visible under its name without its header.
   */
  LogFile publish(boolean snapshot, List<LogRecord> records) throws IOException {
    long seq = ++maxSeq;
    LogFileFormat.Buf buf =
        new LogFileFormat.Buf(LogFileFormat.HEADER_BYTES + records.size() * 256);
    buf.raw(
        LogFileFormat.header(
                snapshot ? LogFileFormat.KIND_SNAPSHOT : LogFileFormat.KIND_BATCH,
                seq,
                clock.instant())
            .array());
    for (LogRecord r : records) {
      LogFileFormat.writeRecord(buf, r);
    }
    String name = LogFileFormat.fileName(seq, snapshot);
    Path target = dir.resolve(name);
    Path tmp = dir.resolve(name + LogFileFormat.TMP_EXT);
    try {
      try (FileChannel ch =
          FileChannel.open(
              tmp,
              Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
              StateDir.fileAttributes(tmp))) {
        ByteBuffer b = buf.asByteBuffer();
        while (b.hasRemaining()) {
          ch.write(b);
        }
        force(ch, true);
      }
      Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException | RuntimeException e) {
      Files.deleteIfExists(tmp);
      throw e;
    }
    force(dirChannel, true);
    LogFile f = new LogFile(seq, target, buf.size(), snapshot);
    files.add(f);
    diskBytes += f.bytes();
    return f;
  }

  /** {@code f} now holds {@code bytes} (a batch was appended to it); returns it so. */
  LogFile grown(LogFile f, long bytes) {
    LogFile g = f.withBytes(bytes);
    files.set(files.indexOf(f), g);
    diskBytes += bytes - f.bytes();
    return g;
  }

  /** Removes {@code f}, which holds nothing yet (its preallocation failed), from the log. */
  void discard(LogFile f) throws IOException {
    files.remove(f);
    diskBytes -= f.bytes();
    Files.deleteIfExists(f.path());
  }

  /**
   * Deletes {@code old}, oldest first, so that any prefix removed leaves a log that replays right,
   * and forces the directory: a snapshot published after them holds what they held.
   */
  void retire(List<LogFile> old) throws IOException {
    for (LogFile f : old) {
      Files.deleteIfExists(f.path());
    }
    force(dirChannel, true);
    files.removeAll(old);
    diskBytes -= old.stream().mapToLong(LogFile::bytes).sum();
  }

  /** The files, oldest first. */
  List<LogFile> list() {
    return List.copyOf(files);
  }

  int count() {
    return files.size();
  }

  long diskBytes() {
    return diskBytes;
  }

  /** Forces {@code ch} to the device ({@code fdatasync} without {@code metadata}), counted. */
  void force(FileChannel ch, boolean metadata) throws IOException {
    ch.force(metadata);
    flushes.incrementAndGet();
  }

  /** Device flushes (file and directory forces) so far. */
  long flushCount() {
    return flushes.get();
  }

  @Override
  public void close() throws IOException {
    dirChannel.close();
  }
}
