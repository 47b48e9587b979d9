package dev.phrony.worker.outbox;

import dev.phrony.worker.testkit.ManualClock;
import static dev.phrony.worker.outbox.Results.json;
import static dev.phrony.worker.outbox.Results.result;
import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.state.StateDir;
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
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Torn and corrupt files: damage is moved aside and reported, the rest loads. */
class OutboxDamageTest {
  private static final OutboxLog.Tuning KEEP_FILES = new OutboxLog.Tuning(1_000, 100_000, 0,
      false);

  @TempDir
  Path tmp;

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
    try (OutboxLog log = OutboxLog.start(outboxDir, stateDir.resolve("corrupt"),
        OutboxLog.read(outboxDir, true), clock, KEEP_FILES)) {
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
    for (int pos = RecordCodec.HEADER_BYTES; pos < b.limit();
        pos += RecordCodec.FRAME_BYTES + b.getInt(pos + 4)) {
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
    return DurableOutbox.open(sd, new DurableOutbox.Options(Durability.WRITES, Duration.ofDays(7),
        clock));
  }

  @Test
  void a_flipped_byte_and_a_torn_tail_are_moved_aside_and_reported_and_the_rest_loads()
      throws IOException {
    List<Path> batches = writeBatches(
        List.of(held("a")),
        List.of(held("b1"), held("b2"), held("b3")),
        List.of(held("c1"), held("c2")));
    assertThat(batches).hasSize(3);
    Path multi = batches.get(1);
    Path torn = batches.get(2);
    int b2 = frames(multi).get(1);
    flipByte(multi, b2 + RecordCodec.FRAME_BYTES + 20); // inside b2's body
    int c2 = frames(torn).get(1);
    truncate(torn, c2 + 30); // the file ends in the middle of c2

    try (StateDir sd = StateDir.open(stateDir); DurableOutbox o = openOutbox(sd)) {
      assertThat(o.pendingIds()).containsExactlyInAnyOrder("a", "b1", "b3", "c1");
      assertThat(json(o.find("b3").orElseThrow())).isEqualTo("{\"id\":\"b3\"}");
      assertThat(o.problems()).hasSize(2);
      assertThat(o.problems().get(0)).contains(multi.getFileName().toString())
          .contains("offset " + b2).contains("checksum mismatch")
          .contains("call id probably 'b2'").contains("resumed at offset");
      assertThat(o.problems().get(1)).contains(torn.getFileName().toString())
          .contains("offset " + c2).contains("truncated");
    }

    Path corrupt = stateDir.resolve("corrupt");
    List<Path> aside = files(corrupt);
    assertThat(aside).hasSize(4);
    assertThat(aside).anySatisfy(p -> assertThat(p.getFileName().toString())
        .startsWith(multi.getFileName().toString()).doesNotEndWith(".problems.txt"));
    assertThat(aside).anySatisfy(p -> assertThat(p.getFileName().toString())
        .startsWith(torn.getFileName().toString()).endsWith(".problems.txt"));
    Path tornCopy = aside.stream().filter(p -> p.getFileName().toString()
        .startsWith(torn.getFileName().toString()) && !p.toString().endsWith(".txt"))
        .findFirst().orElseThrow();
    assertThat(Files.size(tornCopy)).as("the damaged bytes are kept as found")
        .isEqualTo(c2 + 30L);
    assertThat(files(outboxDir)).as("the damaged files left the log")
        .noneMatch(p -> p.equals(multi) || p.equals(torn));

    // The next start finds a clean log with the same content.
    try (StateDir sd = StateDir.open(stateDir); DurableOutbox o = openOutbox(sd)) {
      assertThat(o.problems()).isEmpty();
      assertThat(o.pendingIds()).containsExactlyInAnyOrder("a", "b1", "b3", "c1");
    }
    assertThat(files(corrupt)).hasSize(4);
  }

  @Test
  void a_damaged_header_is_reported_and_its_records_are_still_read() throws IOException {
    List<Path> batches = writeBatches(List.of(held("a")), List.of(held("b")));
    flipByte(batches.get(0), 10); // the sequence number, covered by the header checksum
    try (StateDir sd = StateDir.open(stateDir); DurableOutbox o = openOutbox(sd)) {
      assertThat(o.problems()).singleElement().asString().contains("bad header")
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
    try (StateDir sd = StateDir.open(stateDir); DurableOutbox o = openOutbox(sd)) {
      assertThat(o.pendingIds()).containsExactly("a");
      assertThat(o.problems()).hasSize(2).anySatisfy(p -> assertThat(p)
          .contains("00000000000000000007.batch").contains("bad header"))
          .anySatisfy(p -> assertThat(p).contains("00000000000000000008.batch")
              .contains("shorter (0 bytes)"));
    }
    assertThat(files(stateDir.resolve("corrupt"))).hasSize(4);
  }

  @Test
  void a_newer_format_version_is_moved_aside_with_a_clear_reason() throws IOException {
    List<Path> batches = writeBatches(List.of(held("a")));
    byte[] a = Files.readAllBytes(batches.get(0));
    ByteBuffer.wrap(a).putShort(4, (short) 2); // version 2, header checksum recomputed
    ByteBuffer.wrap(a).putInt(24, RecordCodec.crc(a, 0, 24));
    Files.write(batches.get(0), a);
    try (StateDir sd = StateDir.open(stateDir); DurableOutbox o = openOutbox(sd)) {
      assertThat(o.problems()).singleElement().asString()
          .contains("format version 2 is not supported");
    }
  }

  @Test
  void the_read_only_view_reports_damage_without_moving_anything() throws IOException {
    List<Path> batches = writeBatches(List.of(held("a"), held("b")));
    truncate(batches.get(0), Files.size(batches.get(0)) - 3);
    OutboxView view = OutboxView.read(stateDir);
    assertThat(view.entries()).extracting(OutboxEntry::callId).containsExactly("a");
    assertThat(view.problems()).singleElement().asString().contains("truncated");
    assertThat(files(outboxDir)).containsExactly(batches.get(0));
    assertThat(stateDir.resolve("corrupt")).doesNotExist();
  }
}
