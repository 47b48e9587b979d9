package dev.phrony.worker.outbox;

import dev.phrony.worker.state.StateDir;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The outbox log's writer: an append-only log of immutable, numbered files in one directory ({@link
 * LogFileFormat}), read back at start by {@link LogReader} and kept small by {@link LogCompactor}.
 *
 * <p><b>Group commit.</b> One writer thread takes everything queued since its last write and
 * appends it to the newest file {@code <seq>.batch} with one {@code fdatasync}; callers of {@link
 * #append} block until their batch is on the device, so concurrent appends share one flush. {@link
 * #appendAsync}'s futures complete on the writer, in batch order, so what is chained on them must
 * not block (waiting for this log there throws). A batch file is created (header only) through
 * {@link LogFiles#publish} and is appended to until it reaches the segment size; a new one starts
 * then, after a compaction, and at every start. A failed append is cut off at once. {@link
 * #appendLater} records (release, orphan, drop) ride along with the next batch, or are written
 * after a short linger; losing one to a crash is harmless (a released result comes back held and is
 * acknowledged again; a dropped intent comes back interrupted).
 */
final class LogWriter implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(LogWriter.class);

  /** Smaller segments (tests: a file per batch) are not preallocated. */
  static final long PREALLOCATE_FROM = 64 << 10;

  /**
   * When the writer compacts, how long lazy records wait, and how large a batch file grows.
   *
   * @param segmentBytes batches are appended to the newest file until it reaches this size; 1 gives
   *     every batch a file of its own
   */
  record Tuning(
      int minFilesToCompact,
      int maxFiles,
      long lingerNanos,
      boolean compactOnClose,
      long segmentBytes) {
    static final Tuning DEFAULT =
        new Tuning(32, 1024, TimeUnit.MILLISECONDS.toNanos(50), true, 4L << 20);

    /** A file per batch. */
    Tuning(int minFilesToCompact, int maxFiles, long lingerNanos) {
      this(minFilesToCompact, maxFiles, lingerNanos, true, 1);
    }

    /** A file per batch. */
    Tuning(int minFilesToCompact, int maxFiles, long lingerNanos, boolean compactOnClose) {
      this(minFilesToCompact, maxFiles, lingerNanos, compactOnClose, 1);
    }
  }

  private static final class Pending {
    final List<LogRecord> records;
    final CompletableFuture<Void> done; // null: lazy

    Pending(List<LogRecord> records, boolean sync) {
      this.records = records;
      this.done = sync ? new CompletableFuture<>() : null;
    }
  }

  private final Path dir;
  private final Tuning tuning;
  private final Thread writer;

  // the queue, shared by the appenders and the writer thread under `lock`
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition wake = lock.newCondition();
  private ArrayList<Pending> queue = new ArrayList<>();
  private boolean urgent;
  private long firstLazyNanos;
  private boolean closing;

  // writer thread only (and start-up before it runs)
  private final LogState state;
  private final LogFiles files;
  private final LogCompactor compactor;

  /** The file batches are appended to; null until the next batch starts one. */
  private FileChannel active;

  private LogFile activeFile;

  private final AtomicLong batches = new AtomicLong();

  private final DiskRoom room;

  /** Whether the last segment started was preallocated (for logging the change only). */
  private boolean preallocating = true;

  private LogWriter(
      Path dir, LogReader.Loaded loaded, InstantSource clock, Tuning tuning, DiskRoom room)
      throws IOException {
    this.dir = dir;
    this.tuning = tuning;
    this.room = room;
    this.state = loaded.state();
    this.files = new LogFiles(dir, loaded, clock);
    this.compactor = new LogCompactor(files, tuning);
    this.writer = Thread.ofPlatform().daemon().name("phrony-outbox-writer").unstarted(this::run);
  }

  /**
   * Takes over the log read into {@code loaded}: damaged files are copied into {@code corruptDir}
   * and the log is compacted at once, so what could be read is rewritten and the damaged originals
   * leave the log. Then starts the writer.
   */
  static LogWriter start(
      Path dir, Path corruptDir, LogReader.Loaded loaded, InstantSource clock, Tuning tuning)
      throws IOException {
    return start(
        dir,
        corruptDir,
        loaded,
        clock,
        tuning,
        new DiskRoom(dir, tuning.segmentBytes(), DiskRoom.usableSpaceOf(dir)));
  }

  /** The same, with the room on the disk measured by {@code room}. */
  static LogWriter start(
      Path dir,
      Path corruptDir,
      LogReader.Loaded loaded,
      InstantSource clock,
      Tuning tuning,
      DiskRoom room)
      throws IOException {
    StateDir.ensureOwnerOnlyDir(dir);
    LogWriter w = new LogWriter(dir, loaded, clock, tuning, room);
    try {
      if (!loaded.damaged().isEmpty()) {
        LogReader.copyAside(loaded.damaged(), corruptDir, clock.instant());
        w.compact(); // rewrites what was read, misnamed files' records too
        LogReader.deleteMisnamed(loaded.damaged());
      }
    } catch (IOException | RuntimeException e) {
      w.files.close();
      throw e;
    }
    w.writer.start();
    return w;
  }

  /**
   * Writes {@code records} in the next batch and returns once it is on the device.
   *
   * @throws UncheckedIOException if the batch could not be written
   * @throws IllegalStateException if the log is closed
   */
  void append(List<LogRecord> records) {
    refuseOnWriter("wait for a batch");
    Futures.await(appendAsync(records));
  }

  /** Futures complete on the writer: one that waited there for the log would wait forever. */
  private void refuseOnWriter(String what) {
    if (Thread.currentThread() == writer) {
      throw new IllegalStateException(
          "the outbox writer cannot " + what + " (a completion callback must not block)");
    }
  }

  /**
   * Queues {@code records} for the next batch; the future completes once that batch is on the
   * device, or fails with the {@link IOException} that stopped it.
   *
   * @throws IllegalStateException if the log is closed
   */
  CompletableFuture<Void> appendAsync(List<LogRecord> records) {
    Pending p = new Pending(List.copyOf(records), true);
    enqueue(p);
    return p.done;
  }

  void append(LogRecord record) {
    append(List.of(record));
  }

  /** Queues {@code record} for the next batch without waiting. */
  void appendLater(LogRecord record) {
    enqueue(new Pending(List.of(record), false));
  }

  /** Returns once everything queued before is on the device. */
  void sync() {
    append(List.of());
  }

  private void enqueue(Pending p) {
    lock.lock();
    try {
      if (closing) {
        throw new IllegalStateException("the outbox is closed");
      }
      if (queue.isEmpty()) {
        firstLazyNanos = System.nanoTime(); // lazy records linger from the first one queued
      }
      urgent |= p.done != null;
      queue.add(p);
      wake.signal();
    } finally {
      lock.unlock();
    }
  }

  private void run() {
    while (true) {
      ArrayList<Pending> batch;
      boolean last;
      lock.lock();
      try {
        while (true) {
          if (queue.isEmpty()) {
            if (closing) {
              break;
            }
            wake.awaitUninterruptibly();
            continue;
          }
          if (urgent || closing) {
            break;
          }
          long wait = tuning.lingerNanos() - (System.nanoTime() - firstLazyNanos);
          if (wait <= 0) {
            break;
          }
          try {
            wake.awaitNanos(wait);
          } catch (InterruptedException e) {
            // only close() stops this thread, through `closing`
          }
        }
        batch = queue;
        queue = new ArrayList<>();
        urgent = false;
        last = closing && batch.isEmpty();
      } finally {
        lock.unlock();
      }
      if (last) {
        finalCompaction();
        closeActive();
        return;
      }
      writeBatch(batch);
    }
  }

  private void writeBatch(List<Pending> batch) {
    List<LogRecord> records = new ArrayList<>();
    for (Pending p : batch) {
      records.addAll(p.records);
    }
    IOException failure = null;
    if (!records.isEmpty()) {
      try {
        appendBatch(records);
        records.forEach(state::apply);
        batches.incrementAndGet();
      } catch (IOException e) {
        failure = e;
        log.error("could not write {} outbox records to {}: {}", records.size(), dir, e.toString());
      }
    }
    // Completed here, in batch order: what waits on them only posts to its owner (the
    // dispatcher's context, a stream's writer) and never waits on this log, so it takes
    // microseconds; handing them to another thread cost a wake-up (~70 us on 2 busy cores) on
    // every durable call's path, twice for a call with an intent.
    for (Pending p : batch) {
      if (p.done == null) {
        continue;
      }
      if (failure == null) {
        p.done.complete(null);
      } else {
        p.done.completeExceptionally(failure);
      }
    }
    if (failure == null && compactor.due(state)) {
      try {
        compact();
      } catch (IOException e) {
        log.error("outbox compaction in {} failed (the log stays valid): {}", dir, e.toString());
      }
    }
  }

  private void finalCompaction() {
    try {
      if (compactor.dueAtClose(state)) {
        compact();
      }
    } catch (IOException e) {
      log.error("outbox compaction at close failed (the log stays valid): {}", e.toString());
    }
  }

  private void compact() throws IOException {
    closeActive(); // the snapshot supersedes it; the next batch starts a new file
    compactor.compact(state);
  }

  /**
   * Appends one batch to the newest batch file (starting one if there is none, or it is full) and
   * forces it; a failed append is cut off, so the file ends at its last whole batch.
   */
  private void appendBatch(List<LogRecord> records) throws IOException {
    if (active == null) {
      activeFile = files.publish(false, List.of());
      active = FileChannel.open(activeFile.path(), StandardOpenOption.WRITE);
      preallocate();
    }
    LogFileFormat.Buf buf = new LogFileFormat.Buf(records.size() * 256);
    for (LogRecord r : records) {
      LogFileFormat.writeRecord(buf, r);
    }
    long at = activeFile.bytes();
    try {
      ByteBuffer b = buf.asByteBuffer();
      long pos = at;
      while (b.hasRemaining()) {
        pos += active.write(b, pos);
      }
      files.force(active, false); // fdatasync: within the preallocated size, the data alone
    } catch (IOException | RuntimeException e) {
      closeActive(); // cut back to its last whole batch; the next batch starts a new file
      throw e;
    }
    activeFile = files.grown(activeFile, at + buf.size());
    if (activeFile.bytes() >= tuning.segmentBytes()) {
      closeActive();
    }
  }

  /**
   * Fills a new batch file with zeros up to the segment size, so that an append changes no file
   * metadata and its {@code fdatasync} flushes the data alone (half the cost on ext4). The zeros
   * after the last record read as an unfinished append: cut off at rotation, or at the next start.
   * A disk with less room than a segment gets a file that grows with its appends instead (slower,
   * but every record that fits is written), until there is room again.
   */
  private void preallocate() throws IOException {
    if (tuning.segmentBytes() < PREALLOCATE_FROM) {
      return;
    }
    if (!room.fitsSegment()) {
      unpreallocated();
      return;
    }
    ByteBuffer zeros = ByteBuffer.allocate(256 << 10);
    long pos = activeFile.bytes();
    try {
      while (pos < tuning.segmentBytes()) {
        zeros.clear().limit((int) Math.min(zeros.capacity(), tuning.segmentBytes() - pos));
        while (zeros.hasRemaining()) {
          pos += active.write(zeros, pos);
        }
      }
      files.force(active, true);
      if (!preallocating) {
        preallocating = true;
        log.info("the outbox's disk ({}) has room for whole segments again", dir);
      }
    } catch (IOException | RuntimeException e) {
      try { // the room went while it was filled (another writer, a quota): grow it as it goes
        active.truncate(activeFile.bytes());
        files.force(active, true);
        unpreallocated();
        return;
      } catch (IOException | RuntimeException again) {
        e.addSuppressed(again);
      }
      // Not even that: the file goes again, so retries on a full disk leave nothing behind.
      LogFile f = activeFile;
      try {
        active.close();
      } catch (IOException closing) {
        e.addSuppressed(closing);
      }
      active = null;
      activeFile = null;
      files.discard(f);
      throw e;
    }
  }

  private void unpreallocated() {
    if (preallocating) {
      preallocating = false;
      log.warn("{}", room.problem().orElse("the outbox's disk (" + dir + ") is nearly full"));
    }
  }

  private void closeActive() {
    if (active != null) {
      try {
        if (active.size() > activeFile.bytes()) {
          active.truncate(activeFile.bytes()); // a closed file ends at its last batch
          active.force(true);
        }
        active.close();
      } catch (IOException e) {
        log.debug("closing outbox file {}: {}", activeFile.path(), e.toString());
      }
      active = null;
      activeFile = null;
    }
  }

  /** Device flushes (file and directory {@code force}) so far. */
  long flushCount() {
    return files.flushCount();
  }

  /** Batches written so far. */
  long batchCount() {
    return batches.get();
  }

  long compactionCount() {
    return compactor.count();
  }

  /** Writes what is queued, compacts if worthwhile, and stops the writer. Idempotent. */
  @Override
  public void close() throws IOException {
    refuseOnWriter("close the log");
    lock.lock();
    try {
      if (closing) {
        return;
      }
      closing = true;
      wake.signal();
    } finally {
      lock.unlock();
    }
    boolean interrupted = false;
    while (writer.isAlive()) {
      try {
        writer.join();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    files.close();
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
