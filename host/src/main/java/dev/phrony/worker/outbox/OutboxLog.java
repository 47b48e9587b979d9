package dev.phrony.worker.outbox;

import dev.phrony.worker.Printable;
import dev.phrony.worker.state.StateDir;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.time.InstantSource;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The outbox's files: an append-only log of immutable, numbered files in one directory.
 *
 * <p><b>Group commit.</b> One writer thread takes everything queued since its last write and
 * appends it to the newest file {@code <seq>.batch} with one {@code fdatasync}; callers of
 * {@link #append} block until their batch is on the device, so concurrent appends share one
 * flush. {@link #appendAsync}'s futures complete on the writer, in batch order, so what is
 * chained on them must not block (waiting for this log there throws). A batch file is created
 * (header only) as {@code <seq>.batch.tmp}, forced, renamed into place and the directory forced,
 * and is appended to until it reaches the segment size; a new one starts then, after a
 * compaction, and at every start.
 * {@link #appendLater} records (release, orphan, drop) ride along with the next batch, or are
 * written after a short linger; losing one to a crash is harmless (a released result comes back
 * held and is acknowledged again; a dropped intent comes back interrupted).
 *
 * <p><b>Crash safety.</b> A file is only ever visible under its final name with its header
 * forced; a crash (kill -9 or power loss) during an append leaves the newest file with a torn
 * end, which the next start cuts off: its appenders never returned, so nothing of it was acted
 * on. An unpublished {@code .tmp} is discarded the same way. A failed append is cut off at once.
 *
 * <p><b>Compaction.</b> When enough files are mostly dead, the writer writes the live state as
 * one {@code <seq>.snap} (published the same way) and then deletes the older files. A reader uses
 * the newest snapshot and the files after it, and ignores (the worker deletes) older ones.
 *
 * <p><b>Damage.</b> Every file and record is checksummed (CRC32C). A damaged record is reported
 * and skipped, the reader resynchronises on the next record marker, and the damaged file is
 * copied into {@code corrupt/} before the start-up compaction rewrites what could be read.
 */
final class OutboxLog implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(OutboxLog.class);

  static final String BATCH_EXT = ".batch";
  static final String SNAP_EXT = ".snap";
  static final String TMP_EXT = ".tmp";
  /** Smaller segments (tests: a file per batch) are not preallocated. */
  private static final long PREALLOCATE_FROM = 64 << 10;
  private static final Pattern NAME = Pattern.compile("(\\d{20})(\\.batch|\\.snap)");
  private static final DateTimeFormatter STAMP =
      DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'", Locale.ROOT).withZone(ZoneOffset.UTC);

  /**
   * When the writer compacts, how long lazy records wait, and how large a batch file grows.
   *
   * @param segmentBytes batches are appended to the newest file until it reaches this size;
   *     1 gives every batch a file of its own
   */
  record Tuning(int minFilesToCompact, int maxFiles, long lingerNanos, boolean compactOnClose,
      long segmentBytes) {
    static final Tuning DEFAULT = new Tuning(32, 1024, TimeUnit.MILLISECONDS.toNanos(50), true,
        4L << 20);

    /** A file per batch. */
    Tuning(int minFilesToCompact, int maxFiles, long lingerNanos) {
      this(minFilesToCompact, maxFiles, lingerNanos, true, 1);
    }

    /** A file per batch. */
    Tuning(int minFilesToCompact, int maxFiles, long lingerNanos, boolean compactOnClose) {
      this(minFilesToCompact, maxFiles, lingerNanos, compactOnClose, 1);
    }
  }

  /** A published file of the log. */
  record LogFile(long seq, Path path, long bytes, boolean snapshot) {}

  /**
   * A file that could not be read in full, or is not named as a log file, with what is wrong.
   * Start-up moves it (a misnamed one) or copies it (a damaged log file) into {@code corrupt/}.
   */
  record Damaged(LogFile file, List<String> problems, boolean misnamed) {}

  /** The log as read from its directory. */
  record Loaded(LogState state, List<LogFile> files, List<Damaged> damaged, long maxSeq) {
    List<String> problems() {
      return damaged.stream().flatMap(d -> d.problems().stream()).toList();
    }
  }

  // ---- reading ----

  /**
   * Reads the log in {@code dir} (absent: empty). With {@code cleanUp} (the lock holder only),
   * deletes unpublished {@code .tmp} files and files superseded by the newest snapshot; without
   * it the directory is not touched.
   *
   * @throws NoSuchFileException if a file vanished while reading (a concurrent compaction); a
   *     read-only reader retries
   */
  static Loaded read(Path dir, boolean cleanUp) throws IOException {
    List<LogFile> files = new ArrayList<>();
    Map<Path, List<String>> problems = new LinkedHashMap<>();
    Set<Path> misnamed = new HashSet<>();
    if (Files.isDirectory(dir)) {
      try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
        for (Path p : ds) {
          String name = p.getFileName().toString();
          Matcher m = NAME.matcher(name);
          if (m.matches()) {
            files.add(new LogFile(Long.parseLong(m.group(1)), p, -1,
                m.group(2).equals(SNAP_EXT)));
          } else if (name.endsWith(TMP_EXT)) {
            if (cleanUp) {
              log.info("discarding unpublished outbox file {} (its writer never returned)", p);
              Files.deleteIfExists(p);
            }
          } else {
            // Damage, never ignored: it leaves the log for corrupt/. One whose header says it
            // is a log file (written under a locale whose digits are not ASCII, say) is read.
            misnamed.add(p);
            Optional<LogFile> asLog = misnamedLogFile(p);
            asLog.ifPresent(files::add);
            problems.computeIfAbsent(p, k -> new ArrayList<>()).add(Printable.of(name) + ": "
                + asLog.map(f -> "not named as a log file (" + fileName(f.seq(), f.snapshot())
                    + " would be); its records are read by its header's sequence number")
                    .orElse("not an outbox file"));
          }
        }
      }
    }
    files.sort(Comparator.comparingLong(LogFile::seq));
    int base = 0;
    for (int i = files.size() - 1; i >= 0; i--) {
      if (files.get(i).snapshot()) {
        base = i;
        break;
      }
    }
    for (LogFile stale : files.subList(0, base)) {
      if (cleanUp && !misnamed.contains(stale.path())) {
        Files.deleteIfExists(stale.path()); // a compaction published its snapshot, then stopped
      }
    }
    LogState state = new LogState();
    List<LogFile> live = new ArrayList<>();
    long maxSeq = files.isEmpty() ? 0 : files.getLast().seq();
    // Damaged records' call ids that no later intact record settles: each of those calls may
    // have run, so it must not run again.
    Map<String, Salvage> unsettled = new LinkedHashMap<>();
    LogFile newest = files.isEmpty() ? null : files.getLast();
    for (LogFile f : files.subList(base, files.size())) {
      byte[] bytes = Files.readAllBytes(f.path());
      Instant written = RecordCodec.createdAt(bytes).orElse(Instant.EPOCH);
      List<String> found = new ArrayList<>();
      boolean mayBeTorn = f == newest && !f.snapshot() && !misnamed.contains(f.path());
      int torn = parse(new LogFile(f.seq(), f.path(), bytes.length, f.snapshot()), bytes, found,
          r -> {
            state.apply(r);
            if (!(r instanceof LogRecord.Orphan) && !(r instanceof LogRecord.Interrupted)) {
              unsettled.remove(r.callId());
            }
          }, salvaged -> {
            if (salvaged.mustNotRerun()) {
              unsettled.put(salvaged.callId(), new Salvage(salvaged, written, f.path()));
            }
          }, mayBeTorn);
      long size = bytes.length;
      if (torn >= 0) {
        if (zerosFrom(bytes, torn)) {
          // The preallocated room after the last record (see preallocate): nothing was cut.
          log.debug("outbox file {}: {} preallocated bytes after the last record{}", f.path(),
              bytes.length - torn, cleanUp ? "; cut off" : "");
        } else {
          log.warn("outbox file {}: the last {} bytes are an append a crash cut short (its"
              + " callers never returned, so nothing of it was acted on){}", f.path(),
              bytes.length - torn, cleanUp ? "; cut off" : "");
        }
        if (cleanUp) {
          try (FileChannel ch = FileChannel.open(f.path(), StandardOpenOption.WRITE)) {
            ch.truncate(torn);
            ch.force(false);
          }
          size = torn;
        }
      }
      live.add(new LogFile(f.seq(), f.path(), size, f.snapshot()));
      if (!found.isEmpty()) {
        problems.computeIfAbsent(f.path(), k -> new ArrayList<>()).addAll(found);
      }
    }
    for (Salvage s : unsettled.values()) {
      RecordCodec.Salvaged r = s.record();
      if (state.knows(r.callId())) {
        continue;
      }
      state.apply(new LogRecord.Intent(new IntentRecord(r.callId(), r.sessionId(), r.toolKey(),
          r.sideEffectClass() == null ? "unknown" : r.sideEffectClass(), s.written()), null));
      problems.computeIfAbsent(s.file(), k -> new ArrayList<>()).add(s.file().getFileName()
          + ": call " + Printable.quote(r.callId()) + " of a damaged record is kept as"
          + " interrupted: it may have run, so a re-invoke is refused");
    }
    List<Damaged> damaged = new ArrayList<>();
    problems.forEach((path, list) -> {
      LogFile f = live.stream().filter(l -> l.path().equals(path)).findFirst()
          .orElse(new LogFile(-1, path, -1, false));
      damaged.add(new Damaged(f, List.copyOf(list), misnamed.contains(path)));
    });
    return new Loaded(state, live, damaged, maxSeq);
  }

  /** A file of a log file's shape under a name that is not a log file's, if it is one. */
  private static Optional<LogFile> misnamedLogFile(Path p) {
    if (!Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
      return Optional.empty();
    }
    byte[] head = new byte[RecordCodec.HEADER_BYTES];
    try (var in = Files.newInputStream(p, LinkOption.NOFOLLOW_LINKS)) {
      if (in.readNBytes(head, 0, head.length) < head.length) {
        return Optional.empty();
      }
      RecordCodec.Header h = RecordCodec.readHeader(ByteBuffer.wrap(head));
      if (h.seq() < 1 || (h.kind() != RecordCodec.KIND_BATCH
          && h.kind() != RecordCodec.KIND_SNAPSHOT)) {
        return Optional.empty();
      }
      return Optional.of(new LogFile(h.seq(), p, -1, h.kind() == RecordCodec.KIND_SNAPSHOT));
    } catch (IOException | IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  static String fileName(long seq, boolean snapshot) {
    return String.format(Locale.ROOT, "%020d", seq) + (snapshot ? SNAP_EXT : BATCH_EXT);
  }

  private record Salvage(RecordCodec.Salvaged record, Instant written, Path file) {}

  /**
   * Passes the readable records of one file to {@code records} in order; what is wrong goes to
   * {@code problems}, and what a damaged record still says about its call to {@code salvaged}.
   */
  /** True when every byte of {@code a} from {@code from} on is zero (preallocated, unwritten). */
  static boolean zerosFrom(byte[] a, int from) {
    for (int i = from; i < a.length; i++) {
      if (a[i] != 0) {
        return false;
      }
    }
    return true;
  }

  static void parse(LogFile f, byte[] a, List<String> problems, Consumer<LogRecord> records,
      Consumer<RecordCodec.Salvaged> salvaged) {
    parse(f, a, problems, records, salvaged, false);
  }

  /**
   * The same; with {@code mayBeTorn} (the newest batch file, the one appended to), damage that
   * runs to the end of the file is an append a crash cut short: not reported, and its offset
   * returned. Returns -1 when the file has no such end.
   */
  static int parse(LogFile f, byte[] a, List<String> problems, Consumer<LogRecord> records,
      Consumer<RecordCodec.Salvaged> salvaged, boolean mayBeTorn) {
    String where = Printable.of(f.path().getFileName().toString());
    ByteBuffer buf = ByteBuffer.wrap(a);
    try {
      RecordCodec.Header h = RecordCodec.readHeader(buf);
      if (h.seq() != f.seq()) {
        problems.add(where + ": header names sequence " + h.seq() + ", not " + f.seq());
      }
      int expectedKind = f.snapshot() ? RecordCodec.KIND_SNAPSHOT : RecordCodec.KIND_BATCH;
      if (h.kind() != expectedKind) {
        problems.add(where + ": header kind " + h.kind() + " does not match the file name");
      }
    } catch (IllegalArgumentException e) {
      problems.add(where + ": bad header: " + e.getMessage());
    }
    int pos = Math.min(RecordCodec.HEADER_BYTES, a.length);
    while (pos < a.length) {
      int remaining = a.length - pos;
      int body = pos + RecordCodec.FRAME_BYTES;
      String problem = null;
      int len = -1;
      // How much of the body a salvage may read: the frame's own length when it holds.
      int salvageable = Math.max(0, remaining - RecordCodec.FRAME_BYTES);
      if (remaining < RecordCodec.FRAME_BYTES) {
        problem = "truncated record frame (" + remaining + " bytes) at the end of the file";
      } else if (buf.getInt(pos) != RecordCodec.MARKER) {
        problem = "no record marker";
      } else {
        len = buf.getInt(pos + 4);
        if (len < 1 || len > RecordCodec.MAX_BODY) {
          problem = "implausible record length " + len;
        } else if (len > remaining - RecordCodec.FRAME_BYTES) {
          problem = "record of " + len + " bytes is truncated: the file ends "
              + (remaining - RecordCodec.FRAME_BYTES) + " bytes into it";
        } else if (RecordCodec.frameCrc(a, pos, len) != buf.getInt(pos + 8)) {
          problem = "checksum mismatch";
          salvageable = len;
        }
      }
      if (problem == null) {
        try {
          records.accept(RecordCodec.readBody(ByteBuffer.wrap(a, body, len).slice()));
        } catch (IllegalArgumentException e) {
          Optional<RecordCodec.Salvaged> s = RecordCodec.salvage(a, body, len);
          s.ifPresent(salvaged);
          problems.add(where + ": record at offset " + pos + " is unreadable: " + e.getMessage()
              + s.map(OutboxLog::probably).orElse(""));
        }
        pos += RecordCodec.FRAME_BYTES + len; // its checksum holds, so its length does too
        continue;
      }
      int next = resync(a, pos + 1);
      if (mayBeTorn && next >= a.length) {
        return pos; // its appenders never returned: nothing of it was acted on
      }
      Optional<RecordCodec.Salvaged> s = RecordCodec.salvage(a, body, salvageable);
      s.ifPresent(salvaged);
      problems.add(where + ": damaged record at offset " + pos + ": " + problem
          + s.map(OutboxLog::probably).orElse("")
          + (next < a.length ? "; resumed at offset " + next
              : "; " + (a.length - pos) + " bytes up to the end skipped"));
      pos = next;
    }
    return -1;
  }

  private static String probably(RecordCodec.Salvaged s) {
    return " (call id probably " + Printable.quote(s.callId()) + ")";
  }

  /** Offset of the next intact record at or after {@code from}, or the end of the file. */
  private static int resync(byte[] a, int from) {
    ByteBuffer buf = ByteBuffer.wrap(a);
    for (int i = from; i + RecordCodec.FRAME_BYTES <= a.length; i++) {
      if (a[i] != 0x52 || buf.getInt(i) != RecordCodec.MARKER) {
        continue;
      }
      int len = buf.getInt(i + 4);
      if (len >= 1 && len <= a.length - i - RecordCodec.FRAME_BYTES
          && RecordCodec.frameCrc(a, i, len) == buf.getInt(i + 8)) {
        return i;
      }
    }
    return a.length;
  }

  // ---- writing ----

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
  private final InstantSource clock;
  private final FileChannel dirChannel;
  private final Thread writer;

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition wake = lock.newCondition();
  private ArrayList<Pending> queue = new ArrayList<>();
  private boolean urgent;
  private long firstLazyNanos;
  private boolean closing;

  // writer thread only (and start-up before it runs)
  private final LogState state;
  private final List<LogFile> files;
  private long maxSeq;
  private long diskBytes;
  /** The file batches are appended to; null until the next batch starts one. */
  private FileChannel active;
  private LogFile activeFile;

  private final AtomicLong flushes = new AtomicLong();
  private final AtomicLong batches = new AtomicLong();
  private final AtomicLong compactions = new AtomicLong();

  private OutboxLog(Path dir, Loaded loaded, InstantSource clock, Tuning tuning)
      throws IOException {
    this.dir = dir;
    this.tuning = tuning;
    this.clock = clock;
    this.state = loaded.state();
    this.files = new ArrayList<>(loaded.files());
    this.maxSeq = loaded.maxSeq();
    this.diskBytes = files.stream().mapToLong(LogFile::bytes).sum();
    this.dirChannel = FileChannel.open(dir, StandardOpenOption.READ);
    this.writer = Thread.ofPlatform().daemon().name("phrony-outbox-writer").unstarted(this::run);
  }

  /**
   * Takes over the log read into {@code loaded}: damaged files are copied into
   * {@code corruptDir} and the log is compacted at once, so what could be read is rewritten and
   * the damaged originals leave the log. Then starts the writer.
   */
  static OutboxLog start(Path dir, Path corruptDir, Loaded loaded, InstantSource clock,
      Tuning tuning) throws IOException {
    StateDir.ensureOwnerOnlyDir(dir);
    OutboxLog l = new OutboxLog(dir, loaded, clock, tuning);
    try {
      if (!loaded.damaged().isEmpty()) {
        for (Damaged d : loaded.damaged()) {
          Path copy = copyAside(d, corruptDir, clock.instant());
          if (d.misnamed()) {
            log.warn("unexpected file {} in the outbox moved to {} ({})",
                Printable.of(d.file().path().toString()), copy, d.problems().getFirst());
          } else {
            log.warn("outbox file {} is damaged; copied to {} and rewritten without the damaged"
                + " parts", d.file().path(), copy);
          }
        }
        l.compact(); // rewrites what was read, misnamed files' records too
        for (Damaged d : loaded.damaged()) {
          if (d.misnamed() && Files.exists(d.file().path(), LinkOption.NOFOLLOW_LINKS)) {
            Files.delete(d.file().path()); // its copy is in corrupt/
          }
        }
      }
    } catch (IOException | RuntimeException e) {
      l.dirChannel.close();
      throw e;
    }
    l.writer.start();
    return l;
  }

  private static Path copyAside(Damaged d, Path corruptDir, Instant now) throws IOException {
    StateDir.ensureOwnerOnlyDir(corruptDir);
    Path source = d.file().path();
    // The copy's name is printable whatever the original's (its problems file has the original).
    String base = Printable.of(source.getFileName().toString()).replace('\\', '_') + "."
        + STAMP.format(now);
    Path target = corruptDir.resolve(base);
    for (int i = 1; Files.exists(target) || Files.exists(problemsFile(target)); i++) {
      target = corruptDir.resolve(base + "-" + i);
    }
    if (!Files.isRegularFile(source, LinkOption.NOFOLLOW_LINKS)) {
      Files.move(source, target); // a directory or a link: moved as it is, never followed
    } else {
      StateDir.writeAtomically(target, Files.readAllBytes(source));
    }
    StateDir.writeAtomically(problemsFile(target),
        (String.join("\n", d.problems()) + "\n").getBytes(StandardCharsets.UTF_8));
    return target;
  }

  static Path problemsFile(Path corruptCopy) {
    return corruptCopy.resolveSibling(corruptCopy.getFileName() + ".problems.txt");
  }

  /**
   * Writes {@code records} in the next batch and returns once it is on the device.
   *
   * @throws UncheckedIOException if the batch could not be written
   * @throws IllegalStateException if the log is closed
   */
  void append(List<LogRecord> records) {
    refuseOnWriter("wait for a batch");
    ResultOutbox.await(appendAsync(records));
  }

  /** Futures complete on the writer: one that waited there for the log would wait forever. */
  private void refuseOnWriter(String what) {
    if (Thread.currentThread() == writer) {
      throw new IllegalStateException("the outbox writer cannot " + what
          + " (a completion callback must not block)");
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
        log.error("could not write {} outbox records to {}: {}", records.size(), dir,
            e.toString());
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
    if (failure == null && shouldCompact()) {
      try {
        compact();
      } catch (IOException e) {
        log.error("outbox compaction in {} failed (the log stays valid): {}", dir, e.toString());
      }
    }
  }

  private boolean shouldCompact() {
    if (files.size() >= tuning.maxFiles()) {
      return true;
    }
    if (files.size() < tuning.minFilesToCompact() && diskBytes < 2 * tuning.segmentBytes()) {
      return false;
    }
    long live = state.liveBytes();
    return diskBytes - live >= live;
  }

  private void finalCompaction() {
    try {
      if (tuning.compactOnClose()
          && (files.size() > 1 || (state.isEmpty() && !files.isEmpty()))) {
        compact();
      }
    } catch (IOException e) {
      log.error("outbox compaction at close failed (the log stays valid): {}", e.toString());
    }
  }

  /** Replaces every file by one snapshot of the live state (none when nothing is live). */
  private void compact() throws IOException {
    closeActive(); // the snapshot supersedes it; the next batch starts a new file
    List<LogFile> old = List.copyOf(files);
    LogFile snap = null;
    if (!state.isEmpty()) {
      List<LogRecord> live = new ArrayList<>(state.results());
      live.addAll(state.intents());
      snap = publish(true, live); // published before anything older goes
    }
    for (LogFile f : old) { // oldest first: any prefix removed leaves a log that replays right
      Files.deleteIfExists(f.path());
    }
    force(dirChannel);
    files.clear();
    diskBytes = 0;
    if (snap != null) {
      files.add(snap);
      diskBytes = snap.bytes();
    }
    compactions.incrementAndGet();
    log.debug("outbox compacted {} files into {}", old.size(), snap == null ? "none" : snap.path());
  }

  /**
   * Appends one batch to the newest batch file (starting one if there is none, or it is full)
   * and forces it; a failed append is cut off, so the file ends at its last whole batch.
   */
  private void appendBatch(List<LogRecord> records) throws IOException {
    if (active == null) {
      activeFile = publish(false, List.of());
      active = FileChannel.open(activeFile.path(), StandardOpenOption.WRITE);
      preallocate();
    }
    RecordCodec.Buf buf = new RecordCodec.Buf(records.size() * 256);
    for (LogRecord r : records) {
      RecordCodec.writeRecord(buf, r);
    }
    long at = activeFile.bytes();
    try {
      ByteBuffer b = buf.asByteBuffer();
      long pos = at;
      while (b.hasRemaining()) {
        pos += active.write(b, pos);
      }
      active.force(false); // fdatasync: within the preallocated size, the data alone
      flushes.incrementAndGet();
    } catch (IOException | RuntimeException e) {
      closeActive(); // cut back to its last whole batch; the next batch starts a new file
      throw e;
    }
    LogFile grown = new LogFile(activeFile.seq(), activeFile.path(), at + buf.size(), false);
    files.set(files.indexOf(activeFile), grown);
    activeFile = grown;
    diskBytes += buf.size();
    if (grown.bytes() >= tuning.segmentBytes()) {
      closeActive();
    }
  }

  /**
   * Fills a new batch file with zeros up to the segment size, so that an append changes no file
   * metadata and its {@code fdatasync} flushes the data alone (half the cost on ext4). The zeros
   * after the last record read as an unfinished append: cut off at rotation, or at the next start.
   */
  private void preallocate() throws IOException {
    if (tuning.segmentBytes() < PREALLOCATE_FROM) {
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
      active.force(true);
      flushes.incrementAndGet();
    } catch (IOException | RuntimeException e) {
      // No room: the file goes again, so retries on a full disk leave nothing behind.
      LogFile f = activeFile;
      try {
        active.close();
      } catch (IOException closing) {
        e.addSuppressed(closing);
      }
      active = null;
      activeFile = null;
      files.remove(f);
      diskBytes -= f.bytes();
      Files.deleteIfExists(f.path());
      throw e;
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

  /** Writes one file: tmp, force, rename into place, force the directory. */
  private LogFile publish(boolean snapshot, List<LogRecord> records) throws IOException {
    long seq = ++maxSeq;
    RecordCodec.Buf buf = new RecordCodec.Buf(RecordCodec.HEADER_BYTES + records.size() * 256);
    buf.raw(RecordCodec.header(snapshot ? RecordCodec.KIND_SNAPSHOT : RecordCodec.KIND_BATCH, seq,
        clock.instant()).array());
    for (LogRecord r : records) {
      RecordCodec.writeRecord(buf, r);
    }
    String name = fileName(seq, snapshot);
    Path target = dir.resolve(name);
    Path tmp = dir.resolve(name + TMP_EXT);
    try {
      try (FileChannel ch = FileChannel.open(tmp, Set.of(StandardOpenOption.CREATE_NEW,
          StandardOpenOption.WRITE), StateDir.fileAttributes(tmp))) {
        ByteBuffer b = buf.asByteBuffer();
        while (b.hasRemaining()) {
          ch.write(b);
        }
        force(ch);
      }
      Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException | RuntimeException e) {
      Files.deleteIfExists(tmp);
      throw e;
    }
    force(dirChannel);
    LogFile f = new LogFile(seq, target, buf.size(), snapshot);
    files.add(f);
    diskBytes += f.bytes();
    return f;
  }

  private void force(FileChannel ch) throws IOException {
    ch.force(true);
    flushes.incrementAndGet();
  }

  /** Device flushes (file and directory {@code force}) so far. */
  long flushCount() {
    return flushes.get();
  }

  /** Batch files written so far. */
  long batchCount() {
    return batches.get();
  }

  long compactionCount() {
    return compactions.get();
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
    dirChannel.close();
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
