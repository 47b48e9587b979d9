package dev.phrony.worker.outbox;

import dev.phrony.worker.Printable;
import dev.phrony.worker.state.StateDir;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
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
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Recovery: reads the outbox log back from its directory, whatever a crash or a damaged disk left
 * there.
 *
 * <p><b>Crash safety.</b> A file is only ever visible under its final name with its header forced;
 * a crash (kill -9 or power loss) during an append leaves the newest file with a torn end, which
 * the next start cuts off: its appenders never returned, so nothing of it was acted on. An
 * unpublished {@code .tmp} is discarded the same way. A reader uses the newest snapshot and the
 * files after it, and ignores (the worker deletes) older ones; unless that snapshot is damaged:
 * then the older files still there are read too, and kept until what they hold is rewritten.
 *
 * <p><b>Damage.</b> Every file and record is checksummed (CRC32C). A damaged record is reported and
 * skipped, the reader resynchronises on the next record marker, and the damaged file is copied into
 * {@code corrupt/} ({@link #copyAside}) before the start-up compaction rewrites what could be read.
 * What a damaged record still says about its call keeps that call from running twice.
 */
final class LogReader {
  private static final Logger log = LoggerFactory.getLogger(LogReader.class);

  private static final DateTimeFormatter STAMP =
      DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'", Locale.ROOT).withZone(ZoneOffset.UTC);

  private LogReader() {}

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

  private record Salvage(LogFileFormat.Salvaged record, Instant written, Path file) {}

  /**
   * Reads the log in {@code dir} (absent: empty). With {@code cleanUp} (the lock holder only),
   * deletes unpublished {@code .tmp} files and files superseded by the newest snapshot, and cuts
   * off a torn end; without it the directory is not touched.
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
          Optional<LogFile> named = LogFileFormat.named(p);
          if (named.isPresent()) {
            files.add(named.get());
          } else if (name.endsWith(LogFileFormat.TMP_EXT)) {
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
            problems
                .computeIfAbsent(p, k -> new ArrayList<>())
                .add(
                    Printable.of(name)
                        + ": "
                        + asLog
                            .map(
                                f ->
                                    "not named as a log file ("
                                        + LogFileFormat.fileName(f.seq(), f.snapshot())
                                        + " would be); its records are read by its header's sequence number")
                            .orElse("not an outbox file"));
          }
        }
      }
    }
    files.sort(Comparator.comparingLong(LogFile::seq));
    int base = base(files, problems);
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
      Instant written = LogFileFormat.createdAt(bytes).orElse(Instant.EPOCH);
      List<String> found = new ArrayList<>();
      boolean mayBeTorn = f == newest && !f.snapshot() && !misnamed.contains(f.path());
      int torn =
          parse(
              f.withBytes(bytes.length),
              bytes,
              found,
              r -> {
                state.apply(r);
                if (!(r instanceof LogRecord.Orphan) && !(r instanceof LogRecord.Interrupted)) {
                  unsettled.remove(r.callId());
                }
              },
              salvaged -> {
                if (salvaged.mustNotRerun()) {
                  unsettled.put(salvaged.callId(), new Salvage(salvaged, written, f.path()));
                }
              },
              mayBeTorn);
      long size = bytes.length;
      if (torn >= 0) {
        if (zerosFrom(bytes, torn)) {
          // The room the writer preallocated after the last record: nothing was cut.
          log.debug(
              "outbox file {}: {} preallocated bytes after the last record{}",
              f.path(),
              bytes.length - torn,
              cleanUp ? "; cut off" : "");
        } else {
          log.warn(
              "outbox file {}: the last {} bytes are an append a crash cut short (its"
                  + " callers never returned, so nothing of it was acted on){}",
              f.path(),
              bytes.length - torn,
              cleanUp ? "; cut off" : "");
        }
        if (cleanUp) {
          try (FileChannel ch = FileChannel.open(f.path(), StandardOpenOption.WRITE)) {
            ch.truncate(torn);
            ch.force(false);
          }
          size = torn;
        }
      }
      live.add(f.withBytes(size));
      if (!found.isEmpty()) {
        problems.computeIfAbsent(f.path(), k -> new ArrayList<>()).addAll(found);
      }
    }
    for (Salvage s : unsettled.values()) {
      LogFileFormat.Salvaged r = s.record();
      if (state.knows(r.callId())) {
        continue;
      }
      state.apply(
          new LogRecord.Intent(
              new IntentRecord(
                  r.callId(),
                  r.sessionId(),
                  r.toolKey(),
                  r.sideEffectClass() == null ? "unknown" : r.sideEffectClass(),
                  s.written()),
              null));
      problems
          .computeIfAbsent(s.file(), k -> new ArrayList<>())
          .add(
              s.file().getFileName()
                  + ": call "
                  + Printable.quote(r.callId())
                  + " of a damaged record is kept as"
                  + " interrupted: it may have run, so a re-invoke is refused");
    }
    List<Damaged> damaged = new ArrayList<>();
    problems.forEach(
        (path, list) -> {
          LogFile f =
              live.stream()
                  .filter(l -> l.path().equals(path))
                  .findFirst()
                  .orElse(new LogFile(-1, path, -1, false));
          damaged.add(new Damaged(f, List.copyOf(list), misnamed.contains(path)));
        });
    return new Loaded(state, live, damaged, maxSeq);
  }

  /**
   * Where reading starts: the newest snapshot, unless it is damaged and older files are still there
   * (a compaction published it, then stopped before deleting them): then the newest intact snapshot
   * before it, or the oldest file. Those older files are read with everything after them, the
   * damaged snapshot's readable records included, so its damage costs nothing they hold. The
   * damaged snapshot is noted in {@code problems}.
   */
  private static int base(List<LogFile> files, Map<Path, List<String>> problems)
      throws IOException {
    for (int i = files.size() - 1; i >= 0; i--) {
      LogFile f = files.get(i);
      if (!f.snapshot()) {
        continue;
      }
      if (i == 0 || readsWhole(f)) {
        return i;
      }
      int older = i - 1;
      while (older > 0 && !(files.get(older).snapshot() && readsWhole(files.get(older)))) {
        older--;
      }
      problems
          .computeIfAbsent(f.path(), k -> new ArrayList<>())
          .add(
              Printable.of(f.path().getFileName().toString())
                  + ": damaged snapshot: read together with "
                  + (files.get(older).snapshot() ? "the older snapshot " : "the older file ")
                  + files.get(older).path().getFileName()
                  + " and the files after it, which are kept until what they hold is rewritten");
      return older;
    }
    return 0;
  }

  /** Whether every byte of the snapshot {@code f} reads as a header and intact records. */
  private static boolean readsWhole(LogFile f) throws IOException {
    byte[] bytes = Files.readAllBytes(f.path());
    List<String> found = new ArrayList<>();
    parse(f.withBytes(bytes.length), bytes, found, r -> {}, s -> {}, false);
    return found.isEmpty();
  }

  /** A file of a log file's shape under a name that is not a log file's, if it is one. */
  private static Optional<LogFile> misnamedLogFile(Path p) {
    if (!Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
      return Optional.empty();
    }
    byte[] head = new byte[LogFileFormat.HEADER_BYTES];
    try (var in = Files.newInputStream(p, LinkOption.NOFOLLOW_LINKS)) {
      if (in.readNBytes(head, 0, head.length) < head.length) {
        return Optional.empty();
      }
      LogFileFormat.Header h = LogFileFormat.readHeader(ByteBuffer.wrap(head));
      if (h.seq() < 1
          || (h.kind() != LogFileFormat.KIND_BATCH && h.kind() != LogFileFormat.KIND_SNAPSHOT)) {
        return Optional.empty();
      }
      return Optional.of(new LogFile(h.seq(), p, -1, h.kind() == LogFileFormat.KIND_SNAPSHOT));
    } catch (IOException | IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  /** True when every byte of {@code a} from {@code from} on is zero (preallocated, unwritten). */
  private static boolean zerosFrom(byte[] a, int from) {
    for (int i = from; i < a.length; i++) {
      if (a[i] != 0) {
        return false;
      }
    }
    return true;
  }

  /**
   * Passes the readable records of one file to {@code records} in order; what is wrong goes to
   * {@code problems}, and what a damaged record still says about its call to {@code salvaged}. With
   * {@code mayBeTorn} (the newest batch file, the one appended to), damage that runs to the end of
   * the file is an append a crash cut short: not reported, and its offset returned. Returns -1 when
   * the file has no such end.
   */
  private static int parse(
      LogFile f,
      byte[] a,
      List<String> problems,
      Consumer<LogRecord> records,
      Consumer<LogFileFormat.Salvaged> salvaged,
      boolean mayBeTorn) {
    String where = Printable.of(f.path().getFileName().toString());
    ByteBuffer buf = ByteBuffer.wrap(a);
    try {
      LogFileFormat.Header h = LogFileFormat.readHeader(buf);
      if (h.seq() != f.seq()) {
        problems.add(where + ": header names sequence " + h.seq() + ", not " + f.seq());
      }
      int expectedKind = f.snapshot() ? LogFileFormat.KIND_SNAPSHOT : LogFileFormat.KIND_BATCH;
      if (h.kind() != expectedKind) {
        problems.add(where + ": header kind " + h.kind() + " does not match the file name");
      }
    } catch (IllegalArgumentException e) {
      problems.add(where + ": bad header: " + e.getMessage());
    }
    int pos = Math.min(LogFileFormat.HEADER_BYTES, a.length);
    while (pos < a.length) {
      int remaining = a.length - pos;
      int body = pos + LogFileFormat.FRAME_BYTES;
      String problem = null;
      int len = -1;
      // How much of the body a salvage may read: the frame's own length when it holds.
      int salvageable = Math.max(0, remaining - LogFileFormat.FRAME_BYTES);
      if (remaining < LogFileFormat.FRAME_BYTES) {
        problem = "truncated record frame (" + remaining + " bytes) at the end of the file";
      } else if (buf.getInt(pos) != LogFileFormat.MARKER) {
        problem = "no record marker";
      } else {
        len = buf.getInt(pos + 4);
        if (len < 1 || len > LogFileFormat.MAX_BODY) {
          problem = "implausible record length " + len;
        } else if (len > remaining - LogFileFormat.FRAME_BYTES) {
          problem =
              "record of "
                  + len
                  + " bytes is truncated: the file ends "
                  + (remaining - LogFileFormat.FRAME_BYTES)
                  + " bytes into it";
        } else if (LogFileFormat.frameCrc(a, pos, len) != buf.getInt(pos + 8)) {
          problem = "checksum mismatch";
          salvageable = len;
        }
      }
      if (problem == null) {
        try {
          records.accept(LogFileFormat.readBody(ByteBuffer.wrap(a, body, len).slice()));
        } catch (IllegalArgumentException e) {
          Optional<LogFileFormat.Salvaged> s = LogFileFormat.salvage(a, body, len);
          s.ifPresent(salvaged);
          problems.add(
              where
                  + ": record at offset "
                  + pos
                  + " is unreadable: "
                  + e.getMessage()
                  + s.map(LogReader::probably).orElse(""));
        }
        pos += LogFileFormat.FRAME_BYTES + len; // its checksum holds, so its length does too
        continue;
      }
      int next = resync(a, pos + 1);
      if (mayBeTorn && next >= a.length) {
        return pos; // its appenders never returned: nothing of it was acted on
      }
      Optional<LogFileFormat.Salvaged> s = LogFileFormat.salvage(a, body, salvageable);
      s.ifPresent(salvaged);
      problems.add(
          where
              + ": damaged record at offset "
              + pos
              + ": "
              + problem
              + s.map(LogReader::probably).orElse("")
              + (next < a.length
                  ? "; resumed at offset " + next
                  : "; " + (a.length - pos) + " bytes up to the end skipped"));
      pos = next;
    }
    return -1;
  }

  private static String probably(LogFileFormat.Salvaged s) {
    return " (call id probably " + Printable.quote(s.callId()) + ")";
  }

  /** Offset of the next intact record at or after {@code from}, or the end of the file. */
  private static int resync(byte[] a, int from) {
    ByteBuffer buf = ByteBuffer.wrap(a);
    for (int i = from; i + LogFileFormat.FRAME_BYTES <= a.length; i++) {
      if (a[i] != 0x52 || buf.getInt(i) != LogFileFormat.MARKER) {
        continue;
      }
      int len = buf.getInt(i + 4);
      if (len >= 1
          && len <= a.length - i - LogFileFormat.FRAME_BYTES
          && LogFileFormat.frameCrc(a, i, len) == buf.getInt(i + 8)) {
        return i;
      }
    }
    return a.length;
  }

  // ---- setting damage aside (the lock holder, at start) ----

  /**
   * Copies each damaged file into {@code corruptDir} with its problems beside it (a misnamed one
   * that is not a regular file is moved). The start-up compaction then rewrites what was read, and
   * {@link #deleteMisnamed} removes what is left of the misnamed files.
   */
  static void copyAside(List<Damaged> damaged, Path corruptDir, Instant now) throws IOException {
    for (Damaged d : damaged) {
      Path copy = copyAside(d, corruptDir, now);
      if (d.misnamed()) {
        log.warn(
            "unexpected file {} in the outbox moved to {} ({})",
            Printable.of(d.file().path().toString()),
            copy,
            d.problems().getFirst());
      } else {
        log.warn(
            "outbox file {} is damaged; copied to {} and rewritten without the damaged" + " parts",
            d.file().path(),
            copy);
      }
    }
  }

  /** Deletes the misnamed files of {@code damaged}: their copies are in {@code corrupt/}. */
  static void deleteMisnamed(List<Damaged> damaged) throws IOException {
    for (Damaged d : damaged) {
      if (d.misnamed() && Files.exists(d.file().path(), LinkOption.NOFOLLOW_LINKS)) {
        Files.delete(d.file().path());
      }
    }
  }

  private static Path copyAside(Damaged d, Path corruptDir, Instant now) throws IOException {
    StateDir.ensureOwnerOnlyDir(corruptDir);
    Path source = d.file().path();
    // The copy's name is printable whatever the original's (its problems file has the original).
    String base =
        Printable.of(source.getFileName().toString()).replace('\\', '_') + "." + STAMP.format(now);
    Path target = corruptDir.resolve(base);
    for (int i = 1; Files.exists(target) || Files.exists(problemsFile(target)); i++) {
      target = corruptDir.resolve(base + "-" + i);
    }
    if (!Files.isRegularFile(source, LinkOption.NOFOLLOW_LINKS)) {
      Files.move(source, target); // a directory or a link: moved as it is, never followed
    } else {
      StateDir.writeAtomically(target, Files.readAllBytes(source));
    }
    StateDir.writeAtomically(
        problemsFile(target),
        (String.join("\n", d.problems()) + "\n").getBytes(StandardCharsets.UTF_8));
    return target;
  }

  private static Path problemsFile(Path corruptCopy) {
    return corruptCopy.resolveSibling(corruptCopy.getFileName() + ".problems.txt");
  }
}
