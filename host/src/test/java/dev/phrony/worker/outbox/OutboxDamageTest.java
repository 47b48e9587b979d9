package dev.phrony.worker.outbox;

import static dev.phrony.worker.outbox.Results.json;
import static dev.phrony.worker.outbox.Results.result;
import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.state.StateDir;
import dev.phrony.worker.testkit.ManualClock;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Torn and corrupt files: damage is moved aside and reported, the rest loads. */
class OutboxDamageTest {
  /** A file per batch, never compacted: each batch's damage stays in a file of its own. */
  private static final LogWriter.Tuning KEEP_FILES =
      new LogWriter.Tuning(1_000, 100_000, 0, false, 1);

  @TempDir Path tmp;

  private final ManualClock clock = new ManualClock(Instant.parse("2026-03-01T12:00:00Z"));
  private Path stateDir;
  private Path outboxDir;

  @BeforeEach
  void setUp() {
    stateDir = tmp.resolve("state");
    outboxDir = stateDir.resolve("outbox");
  }

  /** Writes one batch file per list, as the writer would, and leaves them uncompacted. */
  @SafeVarargs
  private List<Path> writeBatches(List<LogRecord>... batches) throws IOException {
    StateDir.ensureOwnerOnlyDir(stateDir);
    try (LogWriter log =
        LogWriter.start(
            outboxDir,
            stateDir.resolve("corrupt"),
            LogReader.read(outboxDir, true),
            clock,
            KEEP_FILES)) {
      for (List<LogRecord> b : batches) {
        log.append(b);
      }
    }
    return files(outboxDir);
  }

  private static List<Path> files(Path dir) throws IOException {
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> s = Files.list(dir)) {
      return s.sorted().toList();
    }
  }

  private static LogRecord.Result held(String id) {
    return new LogRecord.Result(result(id, "idempotent_write", "{\"id\":\"" + id + "\"}"), null);
  }

  /** Offsets of the record frames of a file. */
  private static List<Integer> frames(Path file) throws IOException {
    ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file));
    List<Integer> out = new ArrayList<>();
    for (int pos = LogFileFormat.HEADER_BYTES;
        pos < b.limit();
        pos += LogFileFormat.FRAME_BYTES + b.getInt(pos + 4)) {
      out.add(pos);
    }
    return out;
  }

  private static void flipByte(Path file, int offset) throws IOException {
    byte[] a = Files.readAllBytes(file);
    a[offset] ^= 0x5a;
    Files.write(file, a);
  }

  private static void truncate(Path file, long size) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
      ch.truncate(size);
    }
  }

  private DurableOutbox openOutbox(StateDir sd) throws IOException {
    return DurableOutbox.open(
        sd, new DurableOutbox.Options(Durability.WRITES, Duration.ofDays(7), clock));
  }

  @Test
  void a_flipped_byte_and_a_torn_tail_are_moved_aside_and_reported_and_the_rest_loads()
      throws IOException {
    List<Path> batches =
        writeBatches(
            List.of(held("a")),
            List.of(held("b1"), held("b2"), held("b3")),
            List.of(held("c1"), held("c2")),
            List.of(held("d"))); // the newest file: a torn end there is an unfinished append
    assertThat(batches).hasSize(4);
    Path multi = batches.get(1);
    Path torn = batches.get(2);
    int b2 = frames(multi).get(1);
    flipByte(multi, b2 + LogFileFormat.FRAME_BYTES + 20); // inside b2's body
    int c2 = frames(torn).get(1);
    truncate(torn, c2 + 30); // the file ends in the middle of c2

    try (StateDir sd = StateDir.open(stateDir);
        DurableOutbox o = openOutbox(sd)) {
      assertThat(o.pendingIds()).containsExactlyInAnyOrder("a", "b1", "b3", "c1", "d");
      assertThat(json(o.find("b3").orElseThrow())).isEqualTo("{\"id\":\"b3\"}");
      assertThat(o.problems()).hasSize(4);
      assertThat(o.problems().get(0))
          .contains(multi.getFileName().toString())
          .contains("offset " + b2)
          .contains("checksum mismatch")
          .contains("call id probably 'b2'")
          .contains("resumed at offset");
      assertThat(o.problems().get(2))
          .contains(torn.getFileName().toString())
          .contains("offset " + c2)
          .contains("truncated");
      // Their side-effect class is past the damage: the calls may not be safe to run again.
      assertThat(o.problems().get(1))
          .contains("call 'b2' of a damaged record is kept as" + " interrupted");
      assertThat(o.interruptedIds()).containsExactlyInAnyOrder("b2", "c2");
    }

    Path corrupt = stateDir.resolve("corrupt");
    List<Path> aside = files(corrupt);
    assertThat(aside).hasSize(4);
    assertThat(aside)
        .anySatisfy(
            p ->
                assertThat(p.getFileName().toString())
                    .startsWith(multi.getFileName().toString())
                    .doesNotEndWith(".problems.txt"));
    assertThat(aside)
        .anySatisfy(
            p ->
                assertThat(p.getFileName().toString())
                    .startsWith(torn.getFileName().toString())
                    .endsWith(".problems.txt"));
    Path tornCopy =
        aside.stream()
            .filter(
                p ->
                    p.getFileName().toString().startsWith(torn.getFileName().toString())
                        && !p.toString().endsWith(".txt"))
            .findFirst()
            .orElseThrow();
    assertThat(Files.size(tornCopy)).as("the damaged bytes are kept as found").isEqualTo(c2 + 30L);
    assertThat(files(outboxDir))
        .as("the damaged files left the log")
        .noneMatch(p -> p.equals(multi) || p.equals(torn));

    // The next start finds a clean log with the same content.
    try (StateDir sd = StateDir.open(stateDir);
        DurableOutbox o = openOutbox(sd)) {
      assertThat(o.problems()).isEmpty();
      assertThat(o.pendingIds()).containsExactlyInAnyOrder("a", "b1", "b3", "c1", "d");
    }
    assertThat(files(corrupt)).hasSize(4);
  }

  /** Appends {@code records} to the log and closes it, which compacts the log into a snapshot. */
  private Path compactInto(List<LogRecord> records) throws IOException {
    StateDir.ensureOwnerOnlyDir(stateDir);
    try (LogWriter log =
        LogWriter.start(
            outboxDir,
            stateDir.resolve("corrupt"),
            LogReader.read(outboxDir, true),
            clock,
            new LogWriter.Tuning(1_000, 100_000, 0, true, 1))) {
      for (LogRecord r : records) {
        log.append(List.of(r)); // a file each: more than one file is compacted at close
      }
    }
    return files(outboxDir).stream()
        .filter(p -> p.toString().endsWith(".snap"))
        .reduce((a, b) -> b)
        .orElseThrow();
  }

  @Test
  void a_damaged_newer_snapshot_never_costs_the_intact_older_one_its_results() throws IOException {
    List<LogRecord> first = new ArrayList<>();
    for (int i = 1; i <= 29; i++) {
      first.add(held("r" + i));
    }
    Path older = compactInto(first);
    byte[] olderBytes = Files.readAllBytes(older);
    Path newer = compactInto(List.of(held("r30"))); // deletes the older: a compaction that...
    Files.write(older, olderBytes); // ...published the newer one, then stopped
    byte[] a = Files.readAllBytes(newer);
    java.util.Arrays.fill(a, LogFileFormat.HEADER_BYTES, a.length, (byte) 0x33); // every record
    Files.write(newer, a);
    List<String> expected = first.stream().map(LogRecord::callId).toList();

    assertThat(OutboxView.read(stateDir).entries())
        .as("a reader sees them too")
        .extracting(OutboxEntry::callId)
        .containsExactlyInAnyOrderElementsOf(expected);
    try (StateDir sd = StateDir.open(stateDir);
        DurableOutbox o = openOutbox(sd)) {
      assertThat(o.pendingIds()).containsExactlyInAnyOrderElementsOf(expected);
      assertThat(o.problems())
          .anySatisfy(
              p ->
                  assertThat(p)
                      .contains(newer.getFileName().toString())
                      .contains("damaged snapshot")
                      .contains(older.getFileName().toString()));
    }
    assertThat(files(stateDir.resolve("corrupt")))
        .as("the damaged one set aside")
        .anySatisfy(
            p ->
                assertThat(p.getFileName().toString())
                    .startsWith(newer.getFileName().toString())
                    .doesNotEndWith(".problems.txt"));
    try (StateDir sd = StateDir.open(stateDir);
        DurableOutbox o = openOutbox(sd)) {
      assertThat(o.problems()).isEmpty();
      assertThat(o.pendingIds())
          .as("kept by the start-up rewrite")
          .containsExactlyInAnyOrderElementsOf(expected);
    }
  }

  @Test
  void a_damaged_header_is_reported_and_its_records_are_still_read() throws IOException {
    List<Path> batches = writeBatches(List.of(held("a")), List.of(held("b")));
    flipByte(batches.get(0), 10); // the sequence number, covered by the header checksum
    try (StateDir sd = StateDir.open(stateDir);
        DurableOutbox o = openOutbox(sd)) {
      assertThat(o.problems())
          .singleElement()
          .asString()
          .contains("bad header")
          .contains("header checksum mismatch");
      assertThat(o.pendingIds()).containsExactlyInAnyOrder("a", "b");
    }
  }

  @Test
  void a_file_of_garbage_or_of_nothing_is_moved_aside_without_stopping_the_start()
      throws IOException {
    writeBatches(List.of(held("a")));
    Files.write(outboxDir.resolve(String.format("%020d.batch", 7)), new byte[] {1, 2, 3, 4, 5});
    Files.write(outboxDir.resolve(String.format("%020d.batch", 8)), new byte[0]);
    try (StateDir sd = StateDir.open(stateDir);
        DurableOutbox o = openOutbox(sd)) {
      assertThat(o.pendingIds()).containsExactly("a");
      assertThat(o.problems())
          .hasSize(2)
          .anySatisfy(
              p -> assertThat(p).contains("00000000000000000007.batch").contains("bad header"))
          .anySatisfy(
              p ->
                  assertThat(p)
                      .contains("00000000000000000008.batch")
                      .contains("shorter (0 bytes)"));
    }
    assertThat(files(stateDir.resolve("corrupt"))).hasSize(4);
  }

  @Test
  void a_newer_format_version_is_moved_aside_with_a_clear_reason() throws IOException {
    List<Path> batches = writeBatches(List.of(held("a")));
    byte[] a = Files.readAllBytes(batches.get(0));
    ByteBuffer.wrap(a).putShort(4, (short) 2); // version 2, header checksum recomputed
    ByteBuffer.wrap(a).putInt(24, LogFileFormat.crc(a, 0, 24));
    Files.write(batches.get(0), a);
    try (StateDir sd = StateDir.open(stateDir);
        DurableOutbox o = openOutbox(sd)) {
      assertThat(o.problems())
          .singleElement()
          .asString()
          .contains("format version 2 is not supported");
    }
  }

  @Test
  void the_read_only_view_reports_damage_without_moving_anything() throws IOException {
    List<Path> batches = writeBatches(List.of(held("a"), held("b")), List.of(held("c")));
    truncate(batches.get(0), Files.size(batches.get(0)) - 3);
    OutboxView view = OutboxView.read(stateDir);
    assertThat(view.entries()).extracting(OutboxEntry::callId).containsExactly("a", "c");
    assertThat(view.problems()).singleElement().asString().contains("truncated");
    assertThat(files(outboxDir)).containsExactlyElementsOf(batches);
    assertThat(stateDir.resolve("corrupt")).doesNotExist();
  }

  private static LogRecord.Intent intent(String id) {
    return new LogRecord.Intent(
        new IntentRecord(
            id,
            "s-1",
            "payments.process-payment@1.0.0",
            "non_idempotent_write",
            Instant.parse("2026-03-01T11:59:00Z")),
        null);
  }

  /** Persian digits: what {@code %020d} gives under {@code fa-IR} without {@code Locale.ROOT}. */
  private static String persian(String asciiDigits) {
    StringBuilder b = new StringBuilder();
    asciiDigits
        .chars()
        .forEach(c -> b.append(Character.isDigit(c) ? (char) ('\u06f0' + c - '0') : (char) c));
    return b.toString();
  }

  @Test
  void under_a_locale_without_ascii_digits_the_outbox_still_keeps_every_intent()
      throws IOException {
    Locale before = Locale.getDefault();
    Locale.setDefault(Locale.forLanguageTag("fa-IR"));
    try {
      assertThat(String.format("%d", 1))
          .as("the locale really has other digits")
          .isEqualTo("\u06f1");
      try (StateDir sd = StateDir.open(stateDir);
          DurableOutbox o = openOutbox(sd)) {
        o.recordIntentAsync(intent("w-1").intent()).join();
      } // the worker stops while w-1 runs
      assertThat(files(outboxDir))
          .isNotEmpty()
          .allSatisfy(
              p -> assertThat(p.getFileName().toString()).matches("[0-9]{20}\\.(batch|snap)"));
      try (StateDir sd = StateDir.open(stateDir);
          DurableOutbox o = openOutbox(sd)) {
        assertThat(o.wasInterrupted("w-1")).as("a re-invoke is refused").isTrue();
        assertThat(o.problems()).isEmpty();
      }
    } finally {
      Locale.setDefault(before);
    }
  }

  @Test
  void a_log_file_under_a_name_it_should_not_have_is_read_by_its_header_and_moved_aside()
      throws IOException {
    List<Path> batches = writeBatches(List.of(intent("w-1")), List.of(held("a")));
    Path first = batches.get(0);
    Path misnamed = first.resolveSibling(persian(first.getFileName().toString()));
    Files.move(first, misnamed);

    try (StateDir sd = StateDir.open(stateDir);
        DurableOutbox o = openOutbox(sd)) {
      assertThat(o.wasInterrupted("w-1")).isTrue();
      assertThat(o.pendingIds()).containsExactly("a");
      assertThat(o.problems())
          .singleElement()
          .asString()
          .contains(misnamed.getFileName().toString())
          .contains("not named as a log file (" + first.getFileName() + " would be)");
    }
    assertThat(misnamed).as("it left the log").doesNotExist();
    assertThat(files(stateDir.resolve("corrupt")))
        .anySatisfy(
            p ->
                assertThat(p.getFileName().toString())
                    .startsWith(misnamed.getFileName().toString())
                    .doesNotEndWith(".problems.txt"));
    try (StateDir sd = StateDir.open(stateDir);
        DurableOutbox o = openOutbox(sd)) {
      assertThat(o.wasInterrupted("w-1")).as("kept by the start-up rewrite").isTrue();
      assertThat(o.problems()).isEmpty();
    }
  }

  @Test
  void any_other_file_in_the_outbox_is_moved_aside_and_reported_not_ignored() throws IOException {
    writeBatches(List.of(held("a")));
    Files.writeString(outboxDir.resolve("notes.txt"), "hello");
    Files.createDirectory(outboxDir.resolve("extra"));

    try (StateDir sd = StateDir.open(stateDir);
        DurableOutbox o = openOutbox(sd)) {
      assertThat(o.pendingIds()).containsExactly("a");
      assertThat(o.problems())
          .containsExactlyInAnyOrder("notes.txt: not an outbox file", "extra: not an outbox file");
    }
    assertThat(outboxDir.resolve("notes.txt")).doesNotExist();
    assertThat(outboxDir.resolve("extra")).doesNotExist();
    assertThat(files(stateDir.resolve("corrupt")))
        .extracting(p -> p.getFileName().toString())
        .anySatisfy(n -> assertThat(n).startsWith("notes.txt.").doesNotEndWith(".txt"))
        .anySatisfy(n -> assertThat(n).startsWith("extra."));
    assertThat(OutboxView.read(stateDir).problems()).isEmpty();
  }

  @Test
  void a_damaged_intent_still_refuses_a_second_run_of_its_call() throws IOException {
    List<Path> batches =
        writeBatches(
            List.of(held("a"), intent("w-1"), held("b")),
            List.of(intent("w-2")),
            List.of(held("z")));
    Path multi = batches.get(0);
    int w1 = frames(multi).get(1);
    // The start time, well after the call id: the checksum fails, the id still reads.
    flipByte(multi, w1 + LogFileFormat.FRAME_BYTES + 1 + 4 + 3 + 4 + 3 + 4 + 30 + 4 + 20 + 3);
    Path torn = batches.get(1);
    truncate(torn, frames(torn).get(0) + LogFileFormat.FRAME_BYTES + 1 + 4 + 3 + 2);

    try (StateDir sd = StateDir.open(stateDir);
        DurableOutbox o = openOutbox(sd)) {
      assertThat(o.pendingIds()).containsExactlyInAnyOrder("a", "b", "z");
      assertThat(o.wasInterrupted("w-1")).as("a checksum mismatch").isTrue();
      assertThat(o.wasInterrupted("w-2")).as("a torn tail").isTrue();
      assertThat(o.problems())
          .anySatisfy(
              p -> assertThat(p).contains("checksum mismatch").contains("call id probably 'w-1'"))
          .anySatisfy(
              p ->
                  assertThat(p)
                      .contains("call 'w-1' of a damaged record is kept as" + " interrupted"))
          .anySatisfy(p -> assertThat(p).contains("call 'w-2' of a damaged record"));
      assertThat(o.entries())
          .filteredOn(e -> e.callId().equals("w-1"))
          .singleElement()
          .satisfies(e -> assertThat(e.toString()).contains("s-1"));
    }
    try (StateDir sd = StateDir.open(stateDir);
        DurableOutbox o = openOutbox(sd)) {
      assertThat(o.interruptedIds()).containsExactlyInAnyOrder("w-1", "w-2");
      assertThat(o.problems()).isEmpty();
    }
  }

  @Test
  void a_damaged_result_of_an_idempotent_call_is_not_kept_as_interrupted() throws IOException {
    List<Path> batches = writeBatches(List.of(held("a"), held("b")));
    flipByte(batches.get(0), frames(batches.get(0)).get(1) + LogFileFormat.FRAME_BYTES + 60);
    try (StateDir sd = StateDir.open(stateDir);
        DurableOutbox o = openOutbox(sd)) {
      assertThat(o.pendingIds()).containsExactly("a");
      assertThat(o.interruptedIds()).as("running it again is safe").isEmpty();
    }
  }

  @Test
  void a_torn_end_of_the_newest_file_is_an_unfinished_append_cut_off_without_a_report()
      throws IOException {
    List<Path> batches = writeBatches(List.of(held("a")), List.of(intent("w-1"), held("b")));
    Path newest = batches.get(1);
    int w1 = frames(newest).get(0);
    truncate(newest, w1 + LogFileFormat.FRAME_BYTES + 20); // a crash during its append

    assertThat(OutboxView.read(stateDir).problems()).as("a reader sees no damage").isEmpty();
    try (StateDir sd = StateDir.open(stateDir);
        DurableOutbox o = openOutbox(sd)) {
      assertThat(o.problems()).isEmpty();
      assertThat(o.pendingIds()).containsExactly("a");
      assertThat(o.interruptedIds()).as("its append never returned: it never ran").isEmpty();
      assertThat(Files.size(newest)).as("cut off at its last whole batch").isEqualTo(w1);
    }
    assertThat(stateDir.resolve("corrupt")).doesNotExist();
  }
}
