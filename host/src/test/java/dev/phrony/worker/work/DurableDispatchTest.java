package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.outbox.Durability;
import dev.phrony.worker.outbox.DurableOutbox;
import dev.phrony.worker.outbox.IntentRecord;
import dev.phrony.worker.outbox.OutboxEntry;
import dev.phrony.worker.state.StateDir;
import dev.phrony.worker.testkit.FakeScheduler;
import dev.phrony.worker.testkit.ManualClock;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The dispatcher with the durable outbox: intents before side effects, no second run. */
class DurableDispatchTest {
  private final FakeScheduler timers = new FakeScheduler();
  private final FakeSink sink = new FakeSink();
  private final CountDownLatch release = new CountDownLatch(1);

  @TempDir Path dir;

  @AfterEach
  void tearDown() {
    release.countDown();
  }

  private TestHandler payment(TestHandler.Body body) {
    return new TestHandler("pay", "1.0.0", 4, SideEffectClass.NON_IDEMPOTENT_WRITE, body);
  }

  private Dispatcher dispatcher(DurableOutbox outbox, TestHandler h) {
    Dispatcher d = TestDispatchers.of(TestHandler.catalog(h), outbox, timers);
    return d;
  }

  @Test
  void the_intent_is_durable_before_a_non_idempotent_handler_runs() throws Exception {
    try (StateDir sd = StateDir.open(dir);
        DurableOutbox outbox = DurableOutbox.open(sd, DurableOutbox.Options.defaults())) {
      AtomicReference<OutboxEntry.State> seen = new AtomicReference<>();
      Dispatcher d =
          dispatcher(
              outbox,
              payment(
                  call -> {
                    seen.set(
                        outbox.entries().stream()
                            .filter(e -> e.callId().equals(call.callId()))
                            .findFirst()
                            .map(OutboxEntry::state)
                            .orElse(null));
                    return ToolResult.json("{\"paid\":true}");
                  }));
      d.onInvoke(TestInvokes.invoke("pay-1", "pay", "{}"), sink);
      assertThat(sink.next()).isInstanceOf(FakeSink.Result.class);
      assertThat(seen.get()).isEqualTo(OutboxEntry.State.RUNNING);
      assertThat(outbox.entries())
          .singleElement()
          .satisfies(e -> assertThat(e.state()).isEqualTo(OutboxEntry.State.HELD));
    }
  }

  @Test
  void a_call_interrupted_by_a_crash_is_nacked_and_never_run_again() throws Exception {
    ManualClock clock = new ManualClock(Instant.parse("2026-01-31T12:00:00Z"));
    DurableOutbox.Options options =
        new DurableOutbox.Options(Durability.WRITES, DurableOutbox.DEFAULT_ORPHAN_RETENTION, clock);
    try (StateDir sd = StateDir.open(dir);
        DurableOutbox outbox = DurableOutbox.open(sd, options)) {
      // The process that ran it died between the intent and the result.
      outbox.recordIntent(
          new IntentRecord("pay-1", "s1", "pay@1.0.0", "non_idempotent_write", clock.instant()));
    }
    clock.advance(Duration.ofMinutes(1)); // the worker back a minute later
    try (StateDir sd = StateDir.open(dir);
        DurableOutbox outbox = DurableOutbox.open(sd, options)) {
      TestHandler h = payment(call -> ToolResult.json("{}"));
      Dispatcher d = dispatcher(outbox, h);
      d.execute(() -> assertThat(d.inFlightIds()).contains("pay-1"));
      d.onInvoke(TestInvokes.invoke("pay-1", "pay", "{}"), sink);
      assertThat(sink.next())
          .isInstanceOfSatisfying(
              FakeSink.Nack.class,
              n -> assertThat(n.code()).isEqualTo("previous_attempt_interrupted"));
      assertThat(h.runs).hasValue(0);
    }
  }

  @Test
  void a_cancelled_write_is_refused_when_invoked_again() throws Exception {
    try (StateDir sd = StateDir.open(dir);
        DurableOutbox outbox = DurableOutbox.open(sd, DurableOutbox.Options.defaults())) {
      TestHandler h =
          payment(
              call -> {
                release.await();
                return ToolResult.json("{}");
              });
      Dispatcher d = dispatcher(outbox, h);
      d.onInvoke(TestInvokes.invoke("pay-1", "pay", "{}"), sink);
      dev.phrony.worker.testkit.Await.until("running", () -> h.runs.get() == 1);
      d.onCancel("pay-1", sink);
      d.onInvoke(TestInvokes.invoke("pay-1", "pay", "{}"), sink);
      assertThat(sink.next())
          .isInstanceOfSatisfying(
              FakeSink.Nack.class,
              n -> assertThat(n.code()).isEqualTo("previous_attempt_interrupted"));
      assertThat(h.runs).hasValue(1);
      release.countDown();
      dev.phrony.worker.testkit.Await.until(
          "the cancelled handler returned", () -> d.runningApart() == 0);
      sink.assertNothingMore();
    }
  }

  /** The outbox folder replaced by a file: every write fails, as on a full disk. */
  private static void breakDisk(Path outboxDir) throws java.io.IOException {
    java.nio.file.Files.delete(outboxDir);
    java.nio.file.Files.writeString(outboxDir, "not a directory");
  }

  private static void repairDisk(Path outboxDir) throws java.io.IOException {
    java.nio.file.Files.delete(outboxDir);
    java.nio.file.Files.createDirectory(outboxDir);
  }

  @Test
  void under_durability_all_a_result_the_disk_refuses_is_sent_only_once_it_is_written()
      throws Exception {
    try (StateDir sd = StateDir.open(dir);
        DurableOutbox outbox =
            DurableOutbox.open(
                sd,
                DurableOutbox.Options.defaults()
                    .withDurability(dev.phrony.worker.outbox.Durability.ALL))) {
      TestHandler h =
          new TestHandler(
              "pay", "1.0.0", 4, SideEffectClass.READ_ONLY, call -> ToolResult.json("{\"n\":1}"));
      Dispatcher d = dispatcher(outbox, h);
      Path outboxDir = dir.resolve("outbox");
      breakDisk(outboxDir);
      d.onInvoke(TestInvokes.invoke("r-1", "pay", "{}"), sink);
      dev.phrony.worker.testkit.Await.until("the write failed", () -> outbox.waitingForDisk() == 1);
      assertThat(h.runs).hasValue(1);
      d.execute(sink::assertNothingMore); // after the dispatcher has seen the failure
      assertThat(outbox.diskProblem()).isPresent();

      repairDisk(outboxDir);
      assertThat(sink.next())
          .isInstanceOfSatisfying(
              FakeSink.Result.class, r -> assertThat(r.held().callId()).isEqualTo("r-1"));
      assertThat(outbox.diskProblem()).isEmpty();
      assertThat(outbox.entries()).singleElement().satisfies(e -> assertThat(e.durable()).isTrue());
    }
  }

  @Test
  void an_intent_the_disk_refuses_tells_the_model_why_without_a_host_path() throws Exception {
    try (StateDir sd = StateDir.open(dir);
        DurableOutbox outbox = DurableOutbox.open(sd, DurableOutbox.Options.defaults())) {
      TestHandler h = payment(call -> ToolResult.json("{}"));
      Dispatcher d = dispatcher(outbox, h);
      Path outboxDir = dir.resolve("outbox");
      breakDisk(outboxDir);
      try {
        d.onInvoke(TestInvokes.invoke("pay-1", "pay", "{}"), sink);
        assertThat(sink.next())
            .isInstanceOfSatisfying(
                FakeSink.Result.class,
                r -> {
                  var err = (dev.phrony.worker.call.CallOutcome.Error) r.held().outcome();
                  assertThat(err.code()).isEqualTo("intent_not_durable");
                  assertThat(err.message())
                      .startsWith(
                          "the worker could not record its intent durably,"
                              + " so it did not run the call: ")
                      .doesNotContain(dir.toString())
                      .doesNotContain("/");
                });
        assertThat(h.runs).hasValue(0);
      } finally {
        repairDisk(outboxDir);
      }
    }
  }
}
