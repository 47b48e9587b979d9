package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.call.ArgsCheck;
import dev.phrony.worker.outbox.DurableOutbox;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.state.StateDir;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.FakeScheduler;
import io.grpc.Status;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The five races of issue 12, each forced into the interleaving that broke the old call core
 * (latches and a gated disk, no sleeps). Each failed there: the old dispatcher sent the result of a
 * call cancelled during its hold (race 1), ran a write cancelled during its intent a second time
 * (race 2; since issue 42 such a call, which never ran, is run by a later invoke, once), orphaned
 * {@code s:av:1:1} for a NOT_FOUND naming {@code s:av:1:12} (race 3, in {@link NotFoundCallTest}
 * and below), left every deadline timer queued (race 4), and could lose a slot when a re-invoke
 * attached while the call finished (race 5).
 */
class CallRacesTest {
  @TempDir Path dir;

  private final FakeScheduler timers = new FakeScheduler();
  private final FakeSink sink = new FakeSink();
  private final CountDownLatch release = new CountDownLatch(1);
  private StateDir stateDir;
  private DurableOutbox durable;
  private GatedOutbox outbox;

  @BeforeEach
  void open() throws Exception {
    stateDir = StateDir.open(dir);
    durable = DurableOutbox.open(stateDir, DurableOutbox.Options.defaults());
    outbox = new GatedOutbox(durable);
  }

  @AfterEach
  void close() throws Exception {
    release.countDown();
    durable.close();
    stateDir.close();
  }

  private static TestHandler payment(int max, TestHandler.Body body) {
    return new TestHandler("pay", "1.0.0", max, SideEffectClass.NON_IDEMPOTENT_WRITE, body);
  }

  private Dispatcher dispatcher(TestHandler... handlers) {
    return TestDispatchers.of(TestHandler.catalog(handlers), outbox, timers);
  }

  @Test
  void race1_a_cancel_while_the_result_is_made_durable_sends_nothing() throws Exception {
    TestHandler pay = payment(1, call -> ToolResult.json("{\"paid\":true}"));
    Dispatcher d = dispatcher(pay);
    outbox.gate("p1");
    d.onInvoke(TestInvokes.invoke("p1", "pay", "{}", 0), sink);
    outbox.intentEntered("p1").get(10, TimeUnit.SECONDS).proceed();
    GatedOutbox.Write hold = outbox.holdEntered("p1").get(10, TimeUnit.SECONDS);
    d.onCancel("p1", sink); // lands while the result's fsync runs
    TestDispatchers.settle(d);
    assertThat(d.busy("pay@1.0.0")).as("the cancel frees the slot at once").isZero();
    hold.proceed();
    // Orphaned by the same transition that would have sent it: once it is, nothing went out.
    Await.until("held and orphaned", () -> durable.isOrphaned("p1"));
    TestDispatchers.settle(d);
    assertThat(sink.sent).as("nothing may be sent after the cancel").isEmpty();
    assertThat(d.runningCount()).isZero();
    // The runtime forgot the call; if it invokes it again, the held result answers (rule 5).
    d.onInvoke(TestInvokes.invoke("p1", "pay", "{}", 0), sink);
    assertThat(sink.next())
        .isInstanceOfSatisfying(
            FakeSink.Result.class, r -> assertThat(r.held().callId()).isEqualTo("p1"));
    assertThat(pay.runs).hasValue(1);
  }

  @Test
  void race2_a_cancel_while_the_intent_is_written_never_starts_the_handler() throws Exception {
    TestHandler pay = payment(4, call -> ToolResult.json("{}"));
    Dispatcher d = dispatcher(pay);
    outbox.gate("p1");
    d.onInvoke(TestInvokes.invoke("p1", "pay", "{}", 0), sink);
    GatedOutbox.Write intent = outbox.intentEntered("p1").get(10, TimeUnit.SECONDS);
    d.onCancel("p1", sink); // the intent is not on disk yet: the outbox does not know it
    intent.proceed();
    Await.until("its intent dropped: it never ran", () -> durable.entries().isEmpty());
    assertThat(durable.wasInterrupted("p1")).as("safe to run again").isFalse();
    assertThat(pay.runs).as("the cancelled attempt never ran").hasValue(0);

    d.onInvoke(TestInvokes.invoke("p1", "pay", "{}", 0), sink); // a recovering runtime asks again
    outbox.holdEntered("p1").get(10, TimeUnit.SECONDS).proceed(); // the gate's hold, once
    assertThat(sink.next()).isInstanceOf(FakeSink.Result.class);
    assertThat(pay.runs).as("run once, by the invoke that was not cancelled").hasValue(1);
  }

  @Test
  void a_write_cancelled_after_its_start_but_before_its_handler_began_is_safe_to_retry()
      throws Exception {
    // Its thread is made but not yet running the handler (on a JVM whose carriers runaway
    // handlers hold, it may wait there long): here the argument check holds it.
    CountDownLatch checking = new CountDownLatch(1);
    CountDownLatch proceed = new CountDownLatch(1);
    TestHandler pay = payment(4, call -> ToolResult.json("{\"paid\":true}"));
    HandlerCatalog.Entry plain = HandlerCatalog.Entry.of(pay, "test");
    ArgsCheck held =
        args -> {
          checking.countDown();
          await(proceed);
          return null;
        };
    Dispatcher d =
        TestDispatchers.of(
            HandlerCatalog.of(
                List.of(
                    new HandlerCatalog.Entry(
                        plain.descriptor(),
                        pay,
                        plain.classLoader(),
                        "test",
                        plain.descriptorHash(),
                        held))),
            outbox,
            timers);
    d.onInvoke(TestInvokes.invoke("p1", "pay", "{}", 0), sink);
    await(checking); // its intent is on disk, its handler not begun
    d.onCancel("p1", sink);
    // The outbox writer's thread may still be draining the context (it posted the start): the
    // cancel has run only once the context is through, and only then may the handler try to begin.
    TestDispatchers.settle(d);
    proceed.countDown();
    Await.until("its intent dropped", () -> durable.entries().isEmpty());
    assertThat(durable.wasInterrupted("p1")).as("it never ran: safe to run again").isFalse();
    Await.until("its thread ended", () -> d.runningApart() == 0);
    assertThat(pay.runs).hasValue(0);

    d.onInvoke(TestInvokes.invoke("p1", "pay", "{}", 0), sink); // a recovering runtime asks again
    assertThat(sink.next()).isInstanceOf(FakeSink.Result.class);
    assertThat(pay.runs).hasValue(1);
  }

  @Test
  void a_write_cancelled_once_its_handler_began_stays_interrupted() throws Exception {
    CountDownLatch running = new CountDownLatch(1);
    TestHandler pay =
        payment(
            4,
            call -> {
              running.countDown();
              release.await();
              return ToolResult.json("{}");
            });
    Dispatcher d = dispatcher(pay);
    d.onInvoke(TestInvokes.invoke("p1", "pay", "{}", 0), sink);
    await(running);
    d.onCancel("p1", sink);
    Await.until("interrupted", () -> durable.wasInterrupted("p1"));
    d.onInvoke(TestInvokes.invoke("p1", "pay", "{}", 0), sink);
    assertThat(sink.next())
        .isInstanceOfSatisfying(
            FakeSink.Nack.class,
            n -> assertThat(n.code()).isEqualTo("previous_attempt_interrupted"));
    assertThat(pay.runs).hasValue(1);
  }

  @Test
  void race3_not_found_orphans_exactly_the_call_it_names() {
    assertThat(OrphanPolicy.unknownCallId("unknown call_id \"s:av:1:12\"")).hasValue("s:av:1:12");
    assertThat(OrphanPolicy.unknownCallId("call_id \"a\\\"b\" owned by worker \"w2\", not \"w1\""))
        .hasValue("a\"b");
    assertThat(OrphanPolicy.unknownCallId("unknown call_id \"tab\\there\\x00\\u00e9\\\\\""))
        .hasValue("tab\there\u0000\u00e9\\");
    assertThat(OrphanPolicy.unknownCallId("unknown call_id \"caf\\xc3\\xa9\"")).hasValue("café");
    assertThat(OrphanPolicy.unknownCallId("unknown worker \"w1\"")).isEmpty();
    assertThat(OrphanPolicy.unknownCallId("unknown call_id \"unterminated")).isEmpty();
    assertThat(OrphanPolicy.unknownCallId(null)).isEmpty();

    Dispatcher d = dispatcher(TestHandler.of("t", 4, call -> ToolResult.json("{}")));
    d.onInvoke(TestInvokes.invoke("s:av:1:1", "t", "{}", 0), sink);
    d.onInvoke(TestInvokes.invoke("s:av:1:12", "t", "{}", 0), sink);
    Await.until("both sent", () -> sink.sent.size() == 2);
    sink.live = false;
    d.execute(
        () -> d.detach(sink, Status.NOT_FOUND.withDescription("unknown call_id \"s:av:1:12\"")));
    TestDispatchers.settle(d);
    assertThat(durable.isOrphaned("s:av:1:12")).isTrue();
    assertThat(durable.isOrphaned("s:av:1:1")).as("a prefix of the unknown id").isFalse();
    d.execute(() -> assertThat(d.inFlightIds()).containsExactly("s:av:1:1"));
  }

  @Test
  void race4_every_deadline_timer_is_cancelled_when_its_call_ends() throws Exception {
    TestHandler t = TestHandler.of("t", 500, call -> ToolResult.json("{}"));
    TestHandler block =
        TestHandler.of(
            "block",
            10,
            call -> {
              release.await();
              return ToolResult.json("{}");
            });
    Dispatcher d = dispatcher(t, block);
    long hour = timers.clock().millis() + 3_600_000;
    for (int i = 0; i < 500; i++) {
      d.onInvoke(TestInvokes.invoke("c" + i, "t", "{}", hour), sink);
    }
    Await.until("all answered", () -> sink.sent.size() == 500);
    for (int i = 0; i < 10; i++) {
      d.onInvoke(TestInvokes.invoke("b" + i, "block", "{}", hour), sink);
    }
    TestDispatchers.settle(d);
    assertThat(timers.pending()).as("one timer per running call").isEqualTo(10);
    for (int i = 0; i < 5; i++) {
      d.onCancel("b" + i, sink);
    }
    TestDispatchers.settle(d);
    assertThat(timers.pending()).as("cancelled calls hold no timer").isEqualTo(5);
    for (int i = 10; i < 16; i++) { // five take the freed slots, one waits for a slot
      d.onInvoke(TestInvokes.invoke("b" + i, "block", "{}", hour), sink);
    }
    TestDispatchers.settle(d);
    assertThat(timers.pending()).as("the sixth holds its grace timer only").isEqualTo(11);
    timers.advance(Dispatcher.SLOT_GRACE); // then it is nacked
    assertThat(timers.pending()).as("a nacked invoke holds no timer").isEqualTo(10);
    release.countDown();
    Await.until("the rest answered", () -> d.runningCount() == 0 && d.runningApart() == 0);
    assertThat(timers.pending()).as("deadline timers still queued").isZero();
  }

  @Test
  void race5_a_reinvoke_attaching_while_the_call_finishes_keeps_the_slot_count_exact()
      throws Exception {
    CountDownLatch returned = new CountDownLatch(1);
    TestHandler t =
        TestHandler.of(
            "t",
            2,
            call -> {
              release.await();
              returned.countDown();
              return ToolResult.json("{}");
            });
    Dispatcher d = dispatcher(t);
    FakeSink old = new FakeSink();
    d.onInvoke(TestInvokes.invoke("c1", "t", "{}", 0), old);
    Await.until("running", () -> t.runs.get() == 1);
    old.live = false;
    d.execute(() -> d.detach(old, Status.UNAVAILABLE));
    assertThat(d.busy("t@1.0.0")).isZero();
    // Hold the call owner busy, so the re-invoke and the handler's completion queue up
    // behind each other in the order the old code raced them in: attach, finish, take slot.
    CountDownLatch owner = new CountDownLatch(1);
    CountDownLatch holding = new CountDownLatch(1);
    Thread blocker =
        Thread.ofVirtual()
            .start(
                () ->
                    d.execute(
                        () -> {
                          holding.countDown();
                          await(owner);
                        }));
    holding.await();
    d.onInvoke(TestInvokes.invoke("c1", "t", "{}", 0), sink); // queued: attaches and takes a slot
    release.countDown();
    returned.await(); // the handler returned; its completion is queued behind the invoke
    owner.countDown();
    blocker.join();
    assertThat(sink.next())
        .isInstanceOfSatisfying(
            FakeSink.Result.class, r -> assertThat(r.held().callId()).isEqualTo("c1"));
    assertThat(d.busy("t@1.0.0")).as("no slot lost").isZero();
    assertThat(old.sent).isEmpty();
    assertThat(t.runs).hasValue(1);
    // Both slots are still there.
    d.onInvoke(TestInvokes.invoke("c2", "t", "{}", 0), sink);
    d.onInvoke(TestInvokes.invoke("c3", "t", "{}", 0), sink);
    assertThat(
            Set.of(
                ((FakeSink.Result) sink.next()).held().callId(),
                ((FakeSink.Result) sink.next()).held().callId()))
        .containsExactlyInAnyOrder("c2", "c3");
  }

  @Test
  void a_result_from_an_earlier_stream_is_orphaned_when_the_new_stream_s_window_closes()
      throws Exception {
    Dispatcher d =
        dispatcher(
            TestHandler.of(
                "t",
                1,
                call -> {
                  release.await();
                  return ToolResult.json("{}");
                }));
    d.onInvoke(TestInvokes.invoke("c1", "t", "{}", 0), sink);
    sink.live = false;
    d.execute(() -> d.detach(sink, Status.UNAVAILABLE));
    FakeSink next = new FakeSink();
    d.onRegistered(next, Set.of("c1"), Duration.ofSeconds(30));
    release.countDown();
    // The entry is in the outbox before the dispatcher's own "held" transition has run (on the
    // writer's thread); the window's timer below must find that transition done, not racing it.
    Await.until("held", () -> durable.find("c1").isPresent() && d.runningCount() == 0);
    TestDispatchers.settle(d);
    timers.advance(Duration.ofMillis(29_999));
    assertThat(durable.isOrphaned("c1")).isFalse();
    timers.advance(Duration.ofMillis(1));
    assertThat(durable.isOrphaned("c1")).as("nobody asked for it within a TTL").isTrue();
    assertThat(next.sent).isEmpty();
    d.execute(() -> assertThat(d.inFlightIds()).isEmpty());
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
