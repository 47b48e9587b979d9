package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.api.ToolException;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.FakeScheduler;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The dispatcher's rules without gRPC: admission, slots, dedupe, cancel, outcomes. */
class DispatcherTest {
  private final FakeScheduler timers = new FakeScheduler();
  private final MemoryOutbox outbox = new MemoryOutbox();
  private final FakeSink sink = new FakeSink();
  private final CountDownLatch release = new CountDownLatch(1);

  @AfterEach
  void tearDown() {
    release.countDown();
  }

  private Dispatcher dispatcher(TestHandler... handlers) {
    return dispatcher(100, handlers);
  }

  private Dispatcher dispatcher(int maxResultBytes, TestHandler... handlers) {
    return TestDispatchers.of(
        TestHandler.catalog(handlers), outbox, timers, maxResultBytes, WorkerMetrics.NONE);
  }

  private TestHandler blocking(String tool, int max) {
    return TestHandler.of(
        tool,
        max,
        call -> {
          release.await();
          return ToolResult.json("{\"ok\":true}");
        });
  }

  /** {@code t@1.0.0} with one slot: call {@code c1} waits for {@link #release}, others answer. */
  private TestHandler firstBlocks() {
    return TestHandler.of(
        "t",
        1,
        call -> {
          if (call.callId().equals("c1")) {
            release.await();
          }
          return ToolResult.json("{\"ok\":true}");
        });
  }

  private static String payload(FakeSink.Sent s) {
    var r = (FakeSink.Result) s;
    return new String(((CallOutcome.Payload) r.held().outcome()).bytes(), StandardCharsets.UTF_8);
  }

  private static CallOutcome.Error error(FakeSink.Sent s) {
    return (CallOutcome.Error) ((FakeSink.Result) s).held().outcome();
  }

  @Test
  void an_invoke_beyond_max_concurrency_is_nacked_and_a_freed_slot_is_reused() throws Exception {
    TestHandler h = blocking("t", 2);
    Dispatcher d = dispatcher(h);
    d.onInvoke(TestInvokes.invoke("c1", "t", "{}"), sink);
    d.onInvoke(TestInvokes.invoke("c2", "t", "{}"), sink);
    d.onInvoke(TestInvokes.invoke("c3", "t", "{}"), sink);
    TestDispatchers.settle(d);
    timers.advance(Dispatcher.SLOT_GRACE.minusMillis(1));
    sink.assertNothingMore(); // it waits a while for a cancel that would make room
    timers.advance(Duration.ofMillis(1));
    assertThat(sink.next())
        .isEqualTo(
            new FakeSink.Nack(
                "c3",
                "capacity_exhausted",
                "t@1.0.0 is running its maximum of 2 calls on this worker"));
    assertThat(d.busy("t@1.0.0")).isEqualTo(2);
    release.countDown();
    assertThat(payload(sink.next())).isEqualTo("{\"ok\":true}");
    assertThat(payload(sink.next())).isEqualTo("{\"ok\":true}");
    assertThat(d.busy("t@1.0.0")).isZero();
    d.onInvoke(TestInvokes.invoke("c4", "t", "{}"), sink);
    assertThat(((FakeSink.Result) sink.next()).held().callId()).isEqualTo("c4");
  }

  @Test
  void an_invoke_that_overtakes_the_cancel_making_room_for_it_runs_in_the_freed_slot()
      throws Exception {
    // The runtime frees a cancelled call's slot, gives it to its next waiting call and only
    // then sends the cancel: c2's invoke arrives while c1 still holds the one slot.
    Dispatcher d = dispatcher(firstBlocks());
    d.onInvoke(TestInvokes.invoke("c1", "t", "{}"), sink);
    d.onInvoke(TestInvokes.invoke("c2", "t", "{}"), sink);
    d.onInvoke(TestInvokes.invoke("c3", "t", "{}"), sink);
    sink.assertNothingMore();
    d.onCancel("c1", sink);
    assertThat(((FakeSink.Result) sink.next()).held().callId()).isEqualTo("c2");
    assertThat(((FakeSink.Result) sink.next()).held().callId())
        .as("waiting invokes take freed slots in order")
        .isEqualTo("c3");
    TestDispatchers.settle(d);
    timers.advance(Dispatcher.SLOT_GRACE);
    sink.assertNothingMore();
    assertThat(d.busy("t@1.0.0")).isZero();
  }

  @Test
  void an_invoke_waiting_for_a_slot_is_dropped_by_its_cancel_or_its_streams_end() throws Exception {
    Dispatcher d = dispatcher(firstBlocks());
    d.onInvoke(TestInvokes.invoke("c1", "t", "{}"), sink);
    d.onInvoke(TestInvokes.invoke("c2", "t", "{}"), sink);
    d.onCancel("c2", sink); // the runtime gave up on it: it never runs, nothing is sent
    FakeSink other = new FakeSink();
    d.onInvoke(TestInvokes.invoke("c3", "t", "{}"), other);
    d.execute(() -> d.detach(other, Status.UNAVAILABLE));
    d.onInvoke(TestInvokes.invoke("c4", "t", "{}"), sink);
    d.onCancel("c1", sink);
    assertThat(((FakeSink.Result) sink.next()).held().callId()).isEqualTo("c4");
    TestDispatchers.settle(d);
    timers.advance(Dispatcher.SLOT_GRACE);
    sink.assertNothingMore();
    other.assertNothingMore();
  }

  @Test
  void an_invoke_waiting_for_a_slot_invoked_again_waits_once_for_the_later_stream()
      throws Exception {
    Dispatcher d = dispatcher(firstBlocks());
    d.onInvoke(TestInvokes.invoke("c1", "t", "{}"), sink);
    FakeSink earlier = new FakeSink();
    d.onInvoke(TestInvokes.invoke("c2", "t", "{}"), earlier);
    d.onInvoke(TestInvokes.invoke("c2", "t", "{}"), sink);
    TestDispatchers.settle(d);
    assertThat(timers.pending()).as("one grace timer: the first wait was replaced").isEqualTo(1);
    d.onCancel("c1", sink);
    assertThat(((FakeSink.Result) sink.next()).held().callId()).isEqualTo("c2");
    TestDispatchers.settle(d);
    assertThat(timers.pending()).isZero();
    earlier.assertNothingMore();
    sink.assertNothingMore();
  }

  @Test
  void unknown_tool_invalid_args_and_draining_are_nacked_with_their_codes() throws Exception {
    Dispatcher d = dispatcher(TestHandler.of("t", 1, call -> ToolResult.json("{}")));
    d.onInvoke(TestInvokes.invoke("c1", "nope", "{}"), sink);
    assertThat(((FakeSink.Nack) sink.next()).code()).isEqualTo("unknown_tool");
    d.onInvoke(TestInvokes.invoke(Call.of("c1b", "s1", "t", "2.0.0", "{}")), sink);
    assertThat(((FakeSink.Nack) sink.next()).code())
        .as("a served tool at a version not served")
        .isEqualTo("unknown_tool");
    d.onInvoke(TestInvokes.invoke("c2", "t", "{not json"), sink);
    assertThat(((FakeSink.Nack) sink.next()).code()).isEqualTo("invalid_args");
    d.startDraining();
    d.onInvoke(TestInvokes.invoke("c3", "t", "{}"), sink);
    assertThat(((FakeSink.Nack) sink.next()).code()).isEqualTo("draining");
  }

  @Test
  void invalid_args_never_reach_the_handler_and_give_their_slot_back() throws Exception {
    AtomicInteger runs = new AtomicInteger();
    Dispatcher d =
        dispatcher(
            TestHandler.of(
                "t",
                1,
                call -> {
                  runs.incrementAndGet();
                  return ToolResult.json("{}");
                }));
    d.onInvoke(TestInvokes.invoke("c1", "t", "{\"a\":"), sink);
    assertThat(((FakeSink.Nack) sink.next()).callId()).isEqualTo("c1");
    assertThat(d.busy("t@1.0.0")).isZero();
    d.onInvoke(TestInvokes.invoke("c2", "t", "{}"), sink); // the one slot is free again
    assertThat(((FakeSink.Result) sink.next()).held().callId()).isEqualTo("c2");
    assertThat(runs).hasValue(1);
  }

  @Test
  void handlers_cancelled_at_the_end_of_a_drain_are_counted_apart_until_they_finish()
      throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    Dispatcher d =
        dispatcher(
            TestHandler.of(
                "t",
                1,
                call -> {
                  started.countDown();
                  while (true) { // ignores interruption, as rule 4 says a handler may
                    try {
                      finish.await();
                      return ToolResult.json("{}");
                    } catch (InterruptedException e) {
                      // keep waiting
                    }
                  }
                }));
    d.onInvoke(TestInvokes.invoke("c1", "t", "{}"), sink);
    started.await();
    d.startDraining();
    d.cancelAll();
    TestDispatchers.settle(d);
    assertThat(d.runningCount()).isZero();
    assertThat(d.busy("t@1.0.0")).isZero();
    assertThat(d.runningApart()).isEqualTo(1);
    finish.countDown();
    Await.until("the cancelled handler returned", () -> d.runningApart() == 0);
    assertThat(sink.sent).isEmpty(); // its result is dropped
  }

  @Test
  void a_duplicate_invoke_of_a_running_call_runs_the_handler_once() throws Exception {
    TestHandler h = blocking("t", 4);
    Dispatcher d = dispatcher(h);
    d.onInvoke(TestInvokes.invoke("c1", "t", "{}"), sink);
    d.onInvoke(TestInvokes.invoke("c1", "t", "{}"), sink);
    release.countDown();
    assertThat(((FakeSink.Result) sink.next()).held().callId()).isEqualTo("c1");
    Await.until("c1 done", () -> d.runningCount() == 0);
    sink.assertNothingMore(); // both invokes were one call: one handler run, one result
    assertThat(h.runs).hasValue(1);
    assertThat(d.busy("t@1.0.0")).isZero();
  }

  @Test
  void a_duplicate_invoke_of_a_held_call_resends_the_held_result() throws Exception {
    TestHandler h = TestHandler.of("t", 4, call -> ToolResult.json("{\"n\":1}"));
    Dispatcher d = dispatcher(h);
    d.onInvoke(TestInvokes.invoke("c1", "t", "{}"), sink);
    assertThat(payload(sink.next())).isEqualTo("{\"n\":1}");
    d.onInvoke(TestInvokes.invoke("c1", "t", "{}"), sink);
    assertThat(payload(sink.next())).isEqualTo("{\"n\":1}");
    assertThat(h.runs).hasValue(1);
    d.onResultAck("c1");
    TestDispatchers.settle(d);
    assertThat(outbox.find("c1")).isEmpty();
  }

  @Test
  void cancel_interrupts_frees_the_slot_and_sends_nothing_even_if_the_handler_returns()
      throws Exception {
    CountDownLatch interrupted = new CountDownLatch(1);
    CountDownLatch started = new CountDownLatch(1);
    TestHandler h =
        TestHandler.of(
            "t",
            1,
            call -> {
              if (call.callId().equals("c1")) {
                started.countDown();
                try {
                  release.await();
                } catch (InterruptedException e) {
                  interrupted.countDown();
                }
                return ToolResult.json("{\"late\":true}"); // ignores the cancel on purpose
              }
              return ToolResult.json("{}");
            });
    Dispatcher d = dispatcher(h);
    d.onInvoke(TestInvokes.invoke("c1", "t", "{}"), sink);
    started.await();
    d.onCancel("c1", sink);
    assertThat(interrupted.await(10, TimeUnit.SECONDS)).isTrue();
    TestDispatchers.settle(d);
    assertThat(d.busy("t@1.0.0")).isZero();
    d.onInvoke(TestInvokes.invoke("c2", "t", "{}"), sink); // the freed slot takes a new call
    assertThat(((FakeSink.Result) sink.next()).held().callId()).isEqualTo("c2");
    Await.until("the cancelled handler returned", () -> d.runningApart() == 0);
    sink.assertNothingMore();
    assertThat(outbox.find("c1")).isEmpty();
    d.execute(() -> assertThat(d.inFlightIds()).doesNotContain("c1"));
  }

  @Test
  void a_passed_deadline_interrupts_the_handler_and_answers_deadline_exceeded() throws Exception {
    CountDownLatch interrupted = new CountDownLatch(1);
    TestHandler h =
        TestHandler.of(
            "t",
            1,
            call -> {
              try {
                release.await();
              } catch (InterruptedException e) {
                interrupted.countDown();
                throw e;
              }
              return ToolResult.json("{}");
            });
    Dispatcher d = dispatcher(h);
    d.onInvoke(TestInvokes.invoke("c1", "t", "{}", timers.clock().millis() + 50), sink);
    Await.until("handler started", () -> h.runs.get() == 1);
    timers.advance(Duration.ofMillis(49));
    assertThat(sink.sent).isEmpty();
    timers.advance(Duration.ofMillis(1));
    assertThat(error(sink.next()))
        .isEqualTo(
            new CallOutcome.Error("deadline_exceeded", "the call's deadline passed after 50 ms"));
    assertThat(interrupted.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(d.busy("t@1.0.0")).isZero();
    Await.until("the interrupted handler finished", () -> d.runningApart() == 0);
    sink.assertNothingMore();
  }

  @Test
  void outcomes_map_to_results_and_errors() throws Exception {
    record Out(String city, int n) {}
    Dispatcher d =
        dispatcher(
            40,
            TestHandler.of("value", 1, call -> ToolResult.of(new Out("Oslo", 3))),
            TestHandler.of("text", 1, call -> ToolResult.text("plain words")),
            TestHandler.of(
                "tool-error",
                1,
                call -> {
                  throw new ToolException("invalid_args", "city is required");
                }),
            TestHandler.of(
                "crash",
                1,
                call -> {
                  throw new IllegalStateException("boom");
                }),
            TestHandler.of("big", 1, call -> ToolResult.text("x".repeat(41))),
            TestHandler.of("typed", 1, call -> ToolResult.of(call.args(Out.class).city())));
    d.onInvoke(TestInvokes.invoke("c1", "value", "{}"), sink);
    assertThat(payload(sink.next())).isEqualTo("{\"city\":\"Oslo\",\"n\":3}");
    d.onInvoke(TestInvokes.invoke("c2", "text", "{}"), sink);
    assertThat(payload(sink.next())).isEqualTo("plain words");
    d.onInvoke(TestInvokes.invoke("c3", "tool-error", "{}"), sink);
    assertThat(error(sink.next()))
        .isEqualTo(new CallOutcome.Error("invalid_args", "city is required"));
    d.onInvoke(TestInvokes.invoke("c4", "crash", "{}"), sink);
    assertThat(error(sink.next()))
        .satisfies(
            e -> {
              assertThat(e.code()).isEqualTo("internal");
              assertThat(e.message())
                  .as("no exception text for the model")
                  .matches("internal error \\(ref [0-9a-f]{8}\\)");
            });
    d.onInvoke(TestInvokes.invoke("c5", "big", "{}"), sink);
    assertThat(error(sink.next()).code()).isEqualTo("result_too_large");
    d.onInvoke(TestInvokes.invoke("c6", "typed", "{\"city\":\"Bergen\",\"extra\":1}"), sink);
    assertThat(payload(sink.next())).isEqualTo("\"Bergen\"");
    d.onInvoke(TestInvokes.invoke("c7", "typed", "{\"n\":\"not a number\"}"), sink);
    assertThat(error(sink.next()).code()).isEqualTo("invalid_args");
  }

  @Test
  void a_result_finished_after_its_stream_ended_is_held_not_sent() throws Exception {
    TestHandler h = blocking("t", 1);
    Dispatcher d = dispatcher(h);
    d.onInvoke(TestInvokes.invoke("c1", "t", "{}"), sink);
    sink.live = false;
    d.execute(() -> d.detach(sink, Status.UNAVAILABLE));
    TestDispatchers.settle(d);
    assertThat(d.busy("t@1.0.0")).isZero();
    FakeSink next = new FakeSink();
    d.execute(() -> assertThat(d.inFlightIds()).containsExactly("c1"));
    d.onRegistered(next, java.util.Set.of("c1"), Duration.ofSeconds(30));
    release.countDown();
    Await.until("c1 held", () -> outbox.find("c1").isPresent());
    assertThat(next.sent).isEmpty();
    assertThat(outbox.isOrphaned("c1")).as("the runtime may still ask for it").isFalse();
    // The runtime invokes the same call again on the new stream: the held result answers it.
    d.onInvoke(TestInvokes.invoke("c1", "t", "{}"), next);
    assertThat(payload(next.next())).isEqualTo("{\"ok\":true}");
    assertThat(h.runs).hasValue(1);
  }

  @Test
  void the_handler_runs_with_its_plugin_classloader_as_context_loader() throws Exception {
    ClassLoader[] seen = new ClassLoader[1];
    TestHandler h =
        TestHandler.of(
            "t",
            1,
            call -> {
              seen[0] = Thread.currentThread().getContextClassLoader();
              return ToolResult.json("{}");
            });
    ClassLoader marker = new ClassLoader(getClass().getClassLoader()) {};
    HandlerCatalog.Entry e = HandlerCatalog.Entry.of(h, "test");
    HandlerCatalog catalog =
        HandlerCatalog.of(
            java.util.List.of(
                new HandlerCatalog.Entry(
                    e.descriptor(), h, marker, "test", e.descriptorHash(), e.argsCheck())));
    Dispatcher d = TestDispatchers.of(catalog, outbox, timers);
    d.onInvoke(TestInvokes.invoke("c1", "t", "{}"), sink);
    sink.next();
    assertThat(seen[0]).isSameAs(marker);
  }
}
