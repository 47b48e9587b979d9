package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.api.AsyncToolHandler;
import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolCall;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.call.CallPipeline;
import dev.phrony.worker.call.JsonCodec;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.FakeScheduler;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Asynchronous handlers in the dispatcher: started inline on the stream's I/O thread (here the
 * test's thread), finished when their stage completes, cancelled through their stage, and moved to
 * threads of their own once they have blocked that thread three starts in a row.
 */
class AsyncDispatchTest {
  private final FakeScheduler timers = new FakeScheduler();
  private final MemoryOutbox outbox = new MemoryOutbox();
  private final FakeSink sink = new FakeSink();

  /** An asynchronous handler made of a lambda, noting the thread of each start. */
  static final class AsyncHandler implements AsyncToolHandler {
    final List<Thread> startedOn = new CopyOnWriteArrayList<>();
    private final Function<ToolCall, CompletionStage<ToolResult>> body;

    AsyncHandler(Function<ToolCall, CompletionStage<ToolResult>> body) {
      this.body = body;
    }

    @Override
    public ToolDescriptor descriptor() {
      return ToolDescriptor.builder("a")
          .version("1.0.0")
          .maxConcurrency(4)
          .sideEffectClass(SideEffectClass.READ_ONLY)
          .build();
    }

    @Override
    public CompletionStage<ToolResult> handleAsync(ToolCall call) {
      startedOn.add(Thread.currentThread());
      return body.apply(call);
    }
  }

  private Dispatcher dispatcher(AsyncHandler h) {
    return TestDispatchers.of(TestHandler.catalog(h), outbox, timers);
  }

  private static CallOutcome outcome(FakeSink.Sent s) {
    return ((FakeSink.Result) s).held().outcome();
  }

  @Test
  void a_handler_that_answers_at_once_is_answered_inline_before_the_invoke_returns() {
    AsyncHandler h =
        new AsyncHandler(c -> CompletableFuture.completedFuture(ToolResult.json("{\"ok\":true}")));
    Dispatcher d = dispatcher(h);
    d.onInvoke(TestInvokes.invoke("c1", "a", "{}"), sink);
    FakeSink.Sent sent = sink.sent.poll();
    assertThat(sent).as("sent within onInvoke: no thread, no hand-off").isNotNull();
    assertThat(new String(((CallOutcome.Payload) outcome(sent)).bytes(), StandardCharsets.UTF_8))
        .isEqualTo("{\"ok\":true}");
    assertThat(h.startedOn).containsExactly(Thread.currentThread());
    assertThat(d.busy("a@1.0.0")).isZero();
    assertThat(d.runningCount()).isZero();
  }

  @Test
  void its_outcome_goes_out_when_its_stage_completes_on_another_thread() throws Exception {
    CompletableFuture<ToolResult> later = new CompletableFuture<>();
    Dispatcher d = dispatcher(new AsyncHandler(c -> later));
    d.onInvoke(TestInvokes.invoke("c1", "a", "{}"), sink);
    assertThat(d.busy("a@1.0.0")).isEqualTo(1);
    sink.assertNothingMore();
    Thread.ofPlatform().start(() -> later.complete(ToolResult.text("done"))).join();
    assertThat(
            new String(
                ((CallOutcome.Payload) outcome(sink.next())).bytes(), StandardCharsets.UTF_8))
        .isEqualTo("done");
    Await.until("slot freed", () -> d.busy("a@1.0.0") == 0);
  }

  @Test
  void a_cancel_cancels_its_stage_frees_the_slot_and_nothing_is_ever_sent() {
    CompletableFuture<ToolResult> later = new CompletableFuture<>();
    Dispatcher d = dispatcher(new AsyncHandler(c -> later));
    d.onInvoke(TestInvokes.invoke("c1", "a", "{}"), sink);
    d.onCancel("c1", sink);
    assertThat(later).isCancelled();
    assertThat(d.busy("a@1.0.0")).isZero();
    assertThat(d.runningApart()).as("a cancelled stage is finished: nothing runs on").isZero();
    sink.assertNothingMore();
  }

  @Test
  void a_stage_that_cannot_be_cancelled_runs_on_apart_and_its_outcome_is_dropped() {
    CompletableFuture<ToolResult> later = new CompletableFuture<>();
    // A stage that refuses to be cancelled (this one's cancel throws): the worker can only stop
    // listening to it.
    Dispatcher d = dispatcher(new AsyncHandler(c -> later.minimalCompletionStage()));
    d.onInvoke(TestInvokes.invoke("c1", "a", "{}"), sink);
    d.onCancel("c1", sink);
    assertThat(later).isNotCancelled();
    assertThat(d.busy("a@1.0.0")).isZero();
    assertThat(d.runningApart()).isEqualTo(1);
    later.complete(ToolResult.text("too late"));
    assertThat(d.runningApart()).isZero();
    sink.assertNothingMore();
  }

  @Test
  void a_deadline_cancels_its_stage_and_answers_deadline_exceeded() throws Exception {
    CompletableFuture<ToolResult> later = new CompletableFuture<>();
    Dispatcher d = dispatcher(new AsyncHandler(c -> later));
    long deadline = timers.clock().millis() + 1_000;
    d.onInvoke(TestInvokes.invoke("c1", "a", "{}", deadline), sink);
    timers.advance(Duration.ofMillis(999));
    sink.assertNothingMore();
    timers.advance(Duration.ofMillis(1));
    assertThat(((CallOutcome.Error) outcome(sink.next())).code())
        .isEqualTo(CallPipeline.DEADLINE_EXCEEDED);
    assertThat(later).isCancelled();
    assertThat(d.runningApart()).isZero();
    assertThat(d.busy("a@1.0.0")).isZero();
  }

  @Test
  void a_handler_that_blocks_three_starts_in_a_row_is_moved_off_the_io_thread() throws Exception {
    // Each call says how long its start keeps the thread: it moves the test's clock by that.
    long[] heldMs = {25, 0, 25, 25, 21, 0};
    int[] n = {0};
    AsyncHandler h =
        new AsyncHandler(
            c -> {
              timers.manualClock().advance(Duration.ofMillis(heldMs[n[0]++]));
              return CompletableFuture.completedFuture(ToolResult.text("ok"));
            });
    Dispatcher d = dispatcher(h);
    for (int i = 1; i <= 5; i++) {
      d.onInvoke(TestInvokes.invoke("c" + i, "a", "{}"), sink);
      assertThat(outcome(sink.next())).isInstanceOf(CallOutcome.Payload.class);
    }
    assertThat(h.startedOn)
        .as("slow, fast (the count starts again), slow, slow, slow")
        .containsOnly(Thread.currentThread())
        .hasSize(5);
    d.onInvoke(TestInvokes.invoke("c6", "a", "{}"), sink);
    assertThat(outcome(sink.next())).isInstanceOf(CallOutcome.Payload.class);
    assertThat(h.startedOn.get(5))
        .as("after three slow starts in a row")
        .isNotSameAs(Thread.currentThread())
        .satisfies(t -> assertThat(t.isVirtual()).isFalse());
  }

  @Test
  void away_from_the_io_thread_it_starts_on_a_handler_thread_of_its_own() throws Exception {
    AsyncHandler h =
        new AsyncHandler(c -> CompletableFuture.completedFuture(ToolResult.text("ok")));
    Dispatcher d =
        new Dispatcher(
            TestHandler.catalog(h),
            outbox,
            new CallPipeline(new JsonCodec(), new CallPipeline.Settings(1 << 20, false)),
            timers,
            WorkerMetrics.NONE,
            () -> false,
            null);
    d.onInvoke(TestInvokes.invoke("c1", "a", "{}"), sink);
    assertThat(outcome(sink.next())).isInstanceOf(CallOutcome.Payload.class);
    assertThat(h.startedOn)
        .singleElement()
        .satisfies(
            t -> {
              assertThat(t).isNotSameAs(Thread.currentThread());
              assertThat(t.isVirtual()).as("a platform thread: the OS time-slices it").isFalse();
            });
  }

  @Test
  void a_start_that_holds_the_io_thread_over_a_second_is_reported_with_where_it_is()
      throws Exception {
    CountDownLatch inside = new CountDownLatch(1);
    CountDownLatch letGo = new CountDownLatch(1);
    Dispatcher d =
        dispatcher(
            new AsyncHandler(
                c -> {
                  inside.countDown();
                  try {
                    letGo.await(); // breaks the promise: blocks the thread it was called on
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                  return CompletableFuture.completedFuture(ToolResult.text("late"));
                }));
    assertThat(d.reportStalledStart()).isEmpty();
    Thread io =
        Thread.ofPlatform()
            .name("phrony-work-io-test")
            .start(() -> d.onInvoke(TestInvokes.invoke("c1", "a", "{}"), sink));
    inside.await();
    timers.manualClock().advance(Duration.ofMillis(Dispatcher.STALLED_START_MS - 1));
    assertThat(d.reportStalledStart()).as("under a second").isEmpty();
    timers.manualClock().advance(Duration.ofMillis(1));
    CallStarter.StalledStart stall = d.reportStalledStart().orElseThrow();
    assertThat(stall.callId()).isEqualTo("c1");
    assertThat(stall.key()).isEqualTo("a@1.0.0");
    assertThat(stall.heldMs()).isEqualTo(Dispatcher.STALLED_START_MS);
    assertThat(stall.where())
        .anySatisfy(f -> assertThat(f.getClassName()).startsWith(AsyncHandler.class.getName()));
    letGo.countDown();
    io.join();
    assertThat(outcome(sink.next())).isInstanceOf(CallOutcome.Payload.class);
    assertThat(d.reportStalledStart()).as("returned").isEmpty();
  }
}
