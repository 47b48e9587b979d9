package dev.phrony.worker.outbox;

import static dev.phrony.worker.outbox.Results.intent;
import static dev.phrony.worker.outbox.Results.json;
import static dev.phrony.worker.outbox.Results.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.state.StateDir;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.FakeScheduler;
import dev.phrony.worker.testkit.ManualClock;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * The durable outbox on real files: round trips through close and reopen. Its timers (the disk
 * retry, the prune job) run on a fake scheduler: only when a test advances its clock.
 */
class DurableOutboxTest {
  @TempDir Path tmp;

  private final ManualClock clock = new ManualClock(Instant.parse("2026-03-01T12:00:00Z"));
  private final FakeScheduler timers = new FakeScheduler(clock);
  private StateDir stateDir;
  private DurableOutbox outbox;

  @AfterEach
  void tearDown() throws IOException {
    closeAll();
  }

  private Path dir() {
    return tmp.resolve("state");
  }

  private DurableOutbox open(Durability d) throws IOException {
    return open(d, LogWriter.Tuning.DEFAULT);
  }

  private DurableOutbox open(Durability d, LogWriter.Tuning tuning) throws IOException {
    stateDir = StateDir.open(dir());
    outbox =
        DurableOutbox.open(
            stateDir, new DurableOutbox.Options(d, Duration.ofDays(7), clock, timers), tuning);
    return outbox;
  }

  private void closeAll() throws IOException {
    if (outbox != null) {
      outbox.close();
      outbox = null;
    }
    if (stateDir != null) {
      stateDir.close();
      stateDir = null;
    }
  }

  private DurableOutbox reopen(Durability d) throws IOException {
    closeAll();
    return open(d);
  }

  private List<Path> logFiles() throws IOException {
    try (Stream<Path> s = Files.list(dir().resolve("outbox"))) {
      return s.sorted().toList();
    }
  }

  @Test
  void preallocated_room_is_no_torn_append_and_only_a_real_one_is_warned_about()
      throws IOException {
    ListAppender<ILoggingEvent> logs = new ListAppender<>();
    Logger logLog = (Logger) LoggerFactory.getLogger(LogReader.class);
    logs.start();
    logLog.addAppender(logs);
    try {
      DurableOutbox o = open(Durability.WRITES);
      o.hold(result("w1", "non_idempotent_write", "{\"n\":1}"));
      reopen(Durability.WRITES);
      reopen(Durability.WRITES);
      assertThat(logs.list)
          .as("a healthy outbox, opened twice")
          .noneMatch(
              e ->
                  e.getLevel().isGreaterOrEqual(Level.INFO)
                      && e.getFormattedMessage().contains("cut short"));
      closeAll();

      Path newest;
      try (Stream<Path> files = Files.list(dir().resolve("outbox"))) {
        newest = files.filter(p -> p.toString().endsWith(".batch")).sorted().toList().getLast();
      }
      byte[] half = new byte[20];
      java.util.Arrays.fill(half, (byte) 0x5a); // the start of an append a crash cut short
      Files.write(newest, half, java.nio.file.StandardOpenOption.APPEND);
      open(Durability.WRITES);
      assertThat(logs.list)
          .filteredOn(e -> e.getLevel() == Level.WARN)
          .extracting(ILoggingEvent::getFormattedMessage)
          .anyMatch(m -> m.contains("cut short"));
      assertThat(outbox.pendingIds()).containsExactly("w1");
    } finally {
      logLog.detachAppender(logs);
    }
  }

  @Test
  void held_results_survive_reopen_and_released_ones_do_not() throws IOException {
    DurableOutbox o = open(Durability.WRITES);
    o.hold(result("w1", "non_idempotent_write", "{\"n\":1}"));
    o.hold(result("w2", "idempotent_write", "{\"n\":2}"));
    o.hold(result("r1", "read_only", "{\"n\":3}")); // memory only under `writes`
    o.hold(result("x1", "irreversible_action", "{\"n\":4}"));
    assertThat(o.pendingIds()).containsExactlyInAnyOrder("w1", "w2", "r1", "x1");
    o.release("x1");

    o = reopen(Durability.WRITES);
    assertThat(o.pendingIds()).containsExactlyInAnyOrder("w1", "w2");
    assertThat(o.find("w1"))
        .hasValueSatisfying(
            r -> {
              assertThat(json(r)).isEqualTo("{\"n\":1}");
              assertThat(r.sessionId()).isEqualTo("session-1");
              assertThat(r.toolKey()).isEqualTo("pay.charge@1.0.0");
              assertThat(r.sideEffectClass()).isEqualTo("non_idempotent_write");
              assertThat(r.completedAt())
                  .isEqualTo(Instant.parse("2026-01-02T03:04:05.123456789Z"));
            });
    assertThat(o.find("r1")).isEmpty();
    assertThat(o.find("x1")).isEmpty();
    assertThat(o.problems()).isEmpty();

    o.release("w1");
    o.release("w2");
    o = reopen(Durability.WRITES);
    assertThat(o.size()).isZero();
    closeAll();
    assertThat(logFiles()).as("a clean close with nothing held leaves no files").isEmpty();
  }

  @Test
  void error_outcomes_and_null_fields_round_trip() throws IOException {
    DurableOutbox o = open(Durability.ALL);
    HeldResult err =
        new HeldResult(
            "e1",
            null,
            null,
            null,
            null,
            CallOutcome.error("deadline_exceeded", "after 3s — ünïcode"));
    o.hold(err);
    o = reopen(Durability.ALL);
    assertThat(o.find("e1")).hasValue(err);
  }

  @Test
  void durability_all_keeps_read_only_results_and_none_writes_nothing() throws IOException {
    DurableOutbox o = open(Durability.ALL);
    o.hold(result("r1", "read_only", "{}"));
    o.hold(result("u1", "", "{}"));
    o = reopen(Durability.NONE);
    assertThat(o.pendingIds()).containsExactlyInAnyOrder("r1", "u1");
    o.release("r1");
    o.release("u1");
    long flushesBefore = o.flushCount();
    o.hold(result("w1", "irreversible_action", "{}"));
    o.recordIntent(intent("w2", clock.instant()));
    assertThat(o.flushCount())
        .as("none: holds and intents never touch the disk")
        .isEqualTo(flushesBefore);
    o = reopen(Durability.NONE);
    assertThat(o.size()).isZero();
    assertThat(o.interruptedIds()).isEmpty();
  }

  @Test
  void orphaned_state_survives_reopen_and_a_rehold_clears_it() throws IOException {
    DurableOutbox o = open(Durability.WRITES);
    o.hold(result("a", "idempotent_write", "{}"));
    o.hold(result("b", "idempotent_write", "{}"));
    o.markOrphaned("a");
    o = reopen(Durability.WRITES);
    assertThat(o.isOrphaned("a")).isTrue();
    assertThat(o.isOrphaned("b")).isFalse();
    assertThat(o.pendingIds()).containsExactly("b");
    assertThat(o.entries())
        .filteredOn(e -> e.callId().equals("a"))
        .singleElement()
        .satisfies(
            e -> {
              assertThat(e.state()).isEqualTo(OutboxEntry.State.ORPHANED);
              assertThat(e.since()).isEqualTo(clock.instant());
              assertThat(e.sessionId()).isEqualTo("session-1");
              assertThat(e.toolKey()).isEqualTo("pay.charge@1.0.0");
            });

    // The runtime invoked the orphaned call again: the dispatcher holds it again and resends.
    o.hold(o.find("a").orElseThrow());
    o = reopen(Durability.WRITES);
    assertThat(o.isOrphaned("a")).isFalse();
    assertThat(o.pendingIds()).containsExactlyInAnyOrder("a", "b");
  }

  @Test
  void a_rehold_does_not_wait_for_the_disk_but_is_written_with_the_next_batch() throws IOException {
    // Lazy records linger for an hour here: only close (or an urgent batch) writes them.
    DurableOutbox o =
        open(Durability.WRITES, new LogWriter.Tuning(32, 1024, TimeUnit.HOURS.toNanos(1)));
    o.hold(result("a", "idempotent_write", "{}"));
    o.markOrphaned("a");
    o.sync();
    long flushes = o.flushCount();

    // A re-hold runs on the stream's I/O thread: it must return without a flush of its own.
    o.hold(o.find("a").orElseThrow());
    assertThat(o.flushCount()).isEqualTo(flushes);
    assertThat(o.isOrphaned("a")).isFalse();

    o = reopen(Durability.WRITES);
    assertThat(o.isOrphaned("a")).isFalse();
    assertThat(o.pendingIds()).containsExactly("a");
  }

  @Test
  void an_intent_without_a_result_is_interrupted_after_reopen() throws IOException {
    DurableOutbox o = open(Durability.WRITES);
    Instant started = clock.instant();
    o.recordIntent(intent("i1", started));
    o.recordIntent(new IntentRecord("ro", "s", "t@1", "read_only", clock.instant())); // ignored
    o.recordIntent(new IntentRecord("iw", "s", "t@1", "idempotent_write", clock.instant()));
    assertThat(o.wasInterrupted("i1")).as("running, not interrupted").isFalse();
    assertThat(o.interruptedIds()).isEmpty();
    assertThat(o.entries())
        .extracting(OutboxEntry::callId, OutboxEntry::state)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("i1", OutboxEntry.State.RUNNING));

    clock.advance(Duration.ofMinutes(5));
    o = reopen(Durability.WRITES);
    assertThat(o.wasInterrupted("i1")).isTrue();
    assertThat(o.interruptedIds()).containsExactly("i1");
    assertThat(o.pendingIds()).isEmpty();
    assertThat(o.find("i1")).isEmpty();

    clock.advance(Duration.ofMinutes(5));
    o = reopen(Durability.WRITES);
    assertThat(o.entries())
        .singleElement()
        .satisfies(
            e -> {
              assertThat(e.state()).isEqualTo(OutboxEntry.State.INTERRUPTED);
              assertThat(e.since())
                  .as(
                      "the time of the event (its outcome unknown from its start on),"
                          + " written once: not the time an open found it")
                  .isEqualTo(started);
              assertThat(e.startedAt()).isEqualTo(Instant.parse("2026-03-01T12:00:00Z"));
            });

    o.dropIntent("i1");
    o = reopen(Durability.WRITES);
    assertThat(o.interruptedIds()).isEmpty();
  }

  @Test
  void a_result_supersedes_its_intent_and_a_dropped_intent_is_gone() throws IOException {
    DurableOutbox o = open(Durability.WRITES);
    o.recordIntent(intent("done", clock.instant()));
    o.hold(result("done", "non_idempotent_write", "{\"ok\":true}"));
    o.recordIntent(intent("cancelled", clock.instant()));
    o.dropIntent("cancelled");
    o = reopen(Durability.WRITES);
    assertThat(o.wasInterrupted("done")).isFalse();
    assertThat(o.wasInterrupted("cancelled")).isFalse();
    assertThat(o.pendingIds()).containsExactly("done");
    assertThat(o.interruptedIds()).isEmpty();
  }

  @Test
  void files_are_owner_only() throws IOException {
    DurableOutbox o = open(Durability.WRITES);
    o.hold(result("w1", "idempotent_write", "{}"));
    assertThat(Files.getPosixFilePermissions(dir()))
        .isEqualTo(PosixFilePermissions.fromString("rwx------"));
    assertThat(Files.getPosixFilePermissions(dir().resolve("outbox")))
        .isEqualTo(PosixFilePermissions.fromString("rwx------"));
    for (Path f : logFiles()) {
      assertThat(Files.getPosixFilePermissions(f))
          .as(f.toString())
          .isEqualTo(PosixFilePermissions.fromString("rw-------"));
    }
  }

  @Test
  void a_completion_callback_that_waits_for_the_log_is_refused_instead_of_hanging()
      throws Exception {
    DurableOutbox o = open(Durability.ALL);
    // A callback there that waited for the log would wait for its own thread; it gets an
    // IllegalStateException at once instead.
    CompletableFuture<Object> outcome = new CompletableFuture<>();
    onWriter(
        o,
        () -> {
          try {
            o.sync();
            outcome.complete("sync returned");
          } catch (RuntimeException e) {
            outcome.complete(e);
          }
        });
    assertThat(outcome.get(10, TimeUnit.SECONDS))
        .isInstanceOf(IllegalStateException.class)
        .asString()
        .contains("a completion callback must not block");
    o.sync(); // the writer goes on
  }

  /**
   * Runs {@code body} on the writer thread, in the completion callback of a hold (holds complete
   * there). A hold done before its callback is attached runs the callback on this thread instead:
   * then it does nothing, and another hold is tried.
   */
  private static void onWriter(DurableOutbox o, Runnable body) {
    Thread test = Thread.currentThread();
    for (int i = 0; i < 1_000; i++) {
      AtomicBoolean ranHere = new AtomicBoolean();
      o.holdAsync(result("cb" + i, "non_idempotent_write", "{}"))
          .thenRun(
              () -> {
                if (Thread.currentThread() == test) {
                  ranHere.set(true);
                } else {
                  body.run();
                }
              });
      if (!ranHere.get()) {
        return;
      }
    }
    throw new AssertionError("no hold of 1000 was still being written when its callback came");
  }

  @Test
  void holds_queued_while_the_writer_writes_share_one_batch_and_one_flush() throws Exception {
    DurableOutbox o = open(Durability.ALL);
    CountDownLatch writerHeld = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    onWriter(
        o,
        () -> { // after a batch that opened the file the next ones are appended to
          writerHeld.countDown();
          try {
            release.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
    assertThat(writerHeld.await(10, TimeUnit.SECONDS)).as("the writer is held").isTrue();
    long batches = o.batchCount();
    long flushes = o.flushCount();
    int calls = 50;
    List<CompletableFuture<Void>> holds = new ArrayList<>();
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < calls; i++) {
      ids.add("c" + i);
      holds.add(o.holdAsync(result("c" + i, "non_idempotent_write", "{\"i\":" + i + "}")));
    }
    assertThat(holds).as("queued, not written").noneMatch(CompletableFuture::isDone);

    release.countDown();
    CompletableFuture.allOf(holds.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
    assertThat(o.batchCount() - batches).as("one batch for all %d holds", calls).isEqualTo(1);
    assertThat(o.flushCount() - flushes).as("and one fdatasync").isEqualTo(1);
    DurableOutbox again = reopen(Durability.ALL);
    assertThat(again.pendingIds()).containsAll(ids);
  }

  @Test
  void compaction_keeps_the_log_small_and_the_state_right() throws IOException {
    DurableOutbox o = open(Durability.ALL, new LogWriter.Tuning(4, 16, 0));
    for (int i = 0; i < 100; i++) {
      o.hold(result("c" + i, "read_only", "{\"i\":" + i + "}"));
      if (i % 10 != 0) {
        o.release("c" + i);
      }
      if (i % 20 == 0) {
        o.markOrphaned("c" + i);
      }
    }
    o.sync();
    o.sync(); // writes nothing: returns once the writer is past any compaction after the first
    assertThat(o.compactionCount()).isPositive();
    assertThat(logFiles().size()).isLessThanOrEqualTo(16);
    o = reopen(Durability.ALL);
    assertThat(o.size()).isEqualTo(10);
    assertThat(o.pendingIds()).containsExactlyInAnyOrder("c10", "c30", "c50", "c70", "c90");
    assertThat(o.isOrphaned("c40")).isTrue();
    assertThat(o.problems()).isEmpty();
    closeAll();
    assertThat(logFiles())
        .singleElement()
        .satisfies(p -> assertThat(p.toString()).endsWith(".snap"));
  }

  @Test
  void leftovers_of_a_crash_mid_publish_or_mid_compaction_are_cleaned_up() throws IOException {
    DurableOutbox o = open(Durability.ALL, new LogWriter.Tuning(2, 16, 0));
    o.hold(result("a", "read_only", "{}"));
    o.hold(result("b", "read_only", "{}"));
    o.hold(result("c", "read_only", "{}")); // compaction: one snapshot
    closeAll();
    Path outboxDir = dir().resolve("outbox");
    // a batch being written when the process died, and an old file a compaction did not delete
    Files.write(outboxDir.resolve(String.format("%020d.batch.tmp", 99)), new byte[] {1, 2, 3});
    Files.write(outboxDir.resolve(String.format("%020d.batch", 0)), new byte[] {9, 9});
    o = open(Durability.ALL);
    assertThat(o.problems()).isEmpty();
    assertThat(o.pendingIds()).containsExactlyInAnyOrder("a", "b", "c");
    assertThat(logFiles())
        .noneMatch(p -> p.toString().endsWith(".tmp"))
        .noneMatch(p -> p.getFileName().toString().startsWith("00000000000000000000"));
  }

  @Test
  void orphans_and_interrupted_calls_are_pruned_after_the_retention() throws IOException {
    DurableOutbox o = open(Durability.WRITES);
    o.hold(result("held", "idempotent_write", "{}"));
    o.hold(result("orphan", "idempotent_write", "{}"));
    o.hold(result("mem-orphan", "read_only", "{}"));
    o.markOrphaned("orphan");
    o.markOrphaned("mem-orphan");
    o.recordIntent(intent("crashed", clock.instant()));
    o = reopen(Durability.WRITES); // "crashed" is interrupted from now

    clock.advance(Duration.ofDays(7).minusSeconds(1));
    assertThat(o.prune(clock.instant())).isEmpty();
    clock.advance(Duration.ofSeconds(1));
    assertThat(o.prune(clock.instant())).containsExactlyInAnyOrder("orphan", "crashed");
    assertThat(o.find("orphan")).isEmpty();
    assertThat(o.interruptedIds()).isEmpty();
    assertThat(o.pendingIds()).as("held results are never pruned").containsExactly("held");

    o = reopen(Durability.WRITES);
    assertThat(o.size()).isEqualTo(1);
    assertThat(o.interruptedIds()).isEmpty();
  }

  @Test
  void open_prunes_what_expired_while_the_worker_was_down() throws IOException {
    DurableOutbox o = open(Durability.WRITES);
    o.hold(result("orphan", "idempotent_write", "{}"));
    o.markOrphaned("orphan");
    closeAll();
    clock.advance(Duration.ofDays(8));
    o = open(Durability.WRITES);
    assertThat(o.size()).isZero();
  }

  @Test
  void the_prune_job_prunes_on_the_scheduler_s_clock_until_the_outbox_closes() throws IOException {
    DurableOutbox o = open(Durability.WRITES);
    o.hold(result("orphan", "idempotent_write", "{}"));
    o.markOrphaned("orphan");
    o.pruneEvery(Duration.ofHours(1));
    assertThat(timers.dueTimes()).containsExactly(clock.instant().plus(Duration.ofHours(1)));

    timers.advance(Duration.ofDays(7).minusMinutes(1)); // 167 runs, each too early
    assertThat(o.find("orphan")).isPresent();
    timers.advance(Duration.ofMinutes(1)); // the 168th: 7 days orphaned
    assertThat(o.find("orphan")).isEmpty();
    assertThat(timers.pending()).as("the next run is set").isEqualTo(1);

    o.close();
    assertThat(timers.pending()).as("cancelled with the outbox").isZero();
    o = reopen(Durability.WRITES);
    assertThat(o.size()).as("the prune is on disk").isZero();
  }

  @Test
  void the_read_only_view_sees_a_running_worker_s_state() throws IOException {
    DurableOutbox o = open(Durability.WRITES);
    o.hold(result("h", "idempotent_write", "{\"v\":1}"));
    o.hold(result("o", "idempotent_write", "{}"));
    o.markOrphaned("o");
    o.recordIntent(intent("r", clock.instant()));
    o.sync();
    OutboxView view = OutboxView.read(dir());
    assertThat(view.workerPid()).hasValue(ProcessHandle.current().pid());
    assertThat(view.entries())
        .extracting(OutboxEntry::callId, OutboxEntry::state)
        .containsExactlyInAnyOrder(
            org.assertj.core.groups.Tuple.tuple("h", OutboxEntry.State.HELD),
            org.assertj.core.groups.Tuple.tuple("o", OutboxEntry.State.ORPHANED),
            org.assertj.core.groups.Tuple.tuple("r", OutboxEntry.State.RUNNING));
    // Reading the view must not have disturbed the lock.
    assertThatThrownBy(() -> StateDir.open(dir()))
        .isInstanceOf(dev.phrony.worker.state.StateDirLockedException.class);
    closeAll();
    assertThat(OutboxView.read(dir()).find("r"))
        .hasValueSatisfying(e -> assertThat(e.state()).isEqualTo(OutboxEntry.State.INTERRUPTED));
  }

  @Test
  void a_closed_outbox_refuses_durable_holds() throws IOException {
    DurableOutbox o = open(Durability.WRITES);
    o.close();
    assertThatThrownBy(() -> o.hold(result("w", "idempotent_write", "{}")))
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void a_result_the_disk_refuses_is_not_released_until_it_is_written() throws Exception {
    DurableOutbox o = open(Durability.ALL);
    Path outboxDir = dir().resolve("outbox");
    Files.delete(outboxDir); // empty: nothing written yet
    Files.writeString(outboxDir, "not a directory"); // every batch now fails
    CompletableFuture<Void> held;
    try {
      held = o.holdAsync(result("r", "read_only", "{\"n\":1}"));
      Await.until("the write failed and its retry is set", () -> timers.pending() == 1);
      assertThat(o.durabilityFailures()).isEqualTo(1);
      assertThat(held).as("not safe, so not to be sent").isNotDone();
      assertThat(o.diskProblem()).hasValueSatisfying(p -> assertThat(p).doesNotContain("/"));
      assertThat(o.waitingForDisk()).isEqualTo(1);
      assertThatThrownBy(() -> o.recordIntent(intent("i", clock.instant())))
          .isInstanceOf(java.io.UncheckedIOException.class);
      assertThat(o.interruptedIds()).isEmpty();
      assertThat(o.durabilityFailures()).as("a failed intent counts too").isEqualTo(2);

      // Backoff: each failed retry waits twice as long as the one before.
      assertThat(timers.dueTimes()).containsExactly(clock.instant().plusMillis(100));
      timers.advance(Duration.ofMillis(100)); // the retry fails too
      Await.until("the retry failed", () -> o.durabilityFailures() == 3 && timers.pending() == 1);
      assertThat(timers.dueTimes()).containsExactly(clock.instant().plusMillis(200));
      assertThat(held).isNotDone();
    } finally {
      Files.delete(outboxDir);
      Files.createDirectory(outboxDir);
    }
    timers.advance(Duration.ofMillis(199));
    assertThat(held).as("no retry before its time").isNotDone();
    timers.advance(Duration.ofMillis(1));
    held.get(30, TimeUnit.SECONDS); // the retry gets through
    assertThat(o.durabilityFailures()).isEqualTo(3);
    assertThat(o.diskProblem()).isEmpty();
    assertThat(o.waitingForDisk()).isZero();
    closeAll();
    assertThat(OutboxView.read(dir()).find("r")).as("on disk now").isPresent();
  }

  @Test
  void a_disk_with_less_room_than_a_segment_still_takes_writes_and_says_where_and_how_little()
      throws Exception {
    AtomicLong free = new AtomicLong(3L << 20); // 3 MiB: less than the 4 MiB segment
    stateDir = StateDir.open(dir());
    outbox =
        DurableOutbox.open(
            stateDir,
            new DurableOutbox.Options(Durability.WRITES, Duration.ofDays(7), clock, timers),
            LogWriter.Tuning.DEFAULT,
            free::get);
    outbox.recordIntent(intent("w-1", clock.instant()));
    outbox.hold(result("w-1", "non_idempotent_write", "{\"paid\":true}"));
    assertThat(outbox.durabilityFailures()).isZero();
    assertThat(outbox.diskProblem()).as("nothing waits for the disk").isEmpty();
    assertThat(outbox.room().freeBytes()).isEqualTo(3L << 20);
    assertThat(outbox.room().problem())
        .hasValueSatisfying(
            p ->
                assertThat(p)
                    .contains(dir().resolve("outbox").toString())
                    .contains("3.0 MiB free, less than one segment of its log (4.0 MiB)"));
    try (Stream<Path> files = Files.list(dir().resolve("outbox"))) {
      assertThat(files.mapToLong(f -> f.toFile().length()).sum())
          .as("written as it goes, not preallocated")
          .isLessThan(64 << 10);
    }

    free.set(1L << 30);
    assertThat(outbox.room().problem()).as("room again").isEmpty();
    closeAll();
    assertThat(OutboxView.read(dir()).find("w-1")).as("on disk").isPresent();
  }

  @Test
  void a_result_still_waiting_for_the_disk_at_close_fails_its_hold() throws Exception {
    DurableOutbox o = open(Durability.WRITES);
    Path outboxDir = dir().resolve("outbox");
    Files.delete(outboxDir);
    Files.writeString(outboxDir, "not a directory");
    try {
      CompletableFuture<Void> held = o.holdAsync(result("w", "idempotent_write", "{}"));
      Await.until("the write failed", () -> o.waitingForDisk() == 1 && timers.pending() == 1);
      o.close();
      assertThat(held).isCompletedExceptionally();
      assertThat(timers.pending()).as("its retry is cancelled").isZero();
    } finally {
      Files.delete(outboxDir);
      Files.createDirectory(outboxDir);
    }
  }

  @Test
  void utf8_payloads_are_kept_byte_for_byte() throws IOException {
    DurableOutbox o = open(Durability.ALL);
    byte[] bin = new byte[256];
    for (int i = 0; i < bin.length; i++) {
      bin[i] = (byte) i;
    }
    o.hold(
        new HeldResult(
            "bin", "s", "t@1", "read_only", clock.instant(), new CallOutcome.Payload(bin)));
    o.hold(result("txt", "read_only", "\"Grüße 🌍\""));
    o = reopen(Durability.ALL);
    assertThat(((CallOutcome.Payload) o.find("bin").orElseThrow().outcome()).bytes())
        .isEqualTo(bin);
    assertThat(json(o.find("txt").orElseThrow())).isEqualTo("\"Grüße 🌍\"");
  }
}
