package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.outbox.DurableOutbox;
import dev.phrony.worker.state.StateDir;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Event;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.time.ExecutorScheduler;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Thousands of calls of a {@code non_idempotent_write} handler over real gRPC against a {@link
 * LocalRuntime} (which forgets a call when it cancels it, and ends the stream NOT_FOUND for a later
 * result), with the durable outbox, random result delays and cancels at random instants of a call's
 * life: while its intent is written, while its handler runs, while its result is made durable, or
 * never. Afterwards: no stream ended, no handler ran twice for a call id (each cancelled call is
 * invoked again to try), no slot is left taken, no timer is left queued.
 *
 * <p>A cancel is sent while the worker is held at the chosen instant (its write gated, its handler
 * blocked), and the worker is let go only once it has taken the cancel in: a fence call dispatched
 * after the cancel has reached its handler, and the worker handles messages of a stream in order.
 * So a cancel never crosses a result already on the wire, a race no worker can avoid (rule 9 covers
 * it); any NOT_FOUND here is the worker sending after a cancel it had.
 */
class CancelStressTest {
  private static final int LANES = 16;
  private static final int CALLS = Integer.getInteger("phrony.stress.calls", 2_000);
  private static final int ROUNDS = Integer.getInteger("phrony.stress.rounds", 1);
  private static final Duration WAIT = Duration.ofSeconds(30);

  private enum Moment {
    NEVER,
    INTENT,
    HANDLER,
    HOLD
  }

  @TempDir Path dir;

  private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
  private final Map<String, CompletableFuture<Void>> started = new ConcurrentHashMap<>();
  private final Map<String, Boolean> blocking = new ConcurrentHashMap<>();

  @Test
  void cancels_at_random_instants_never_end_a_stream_run_a_write_twice_or_leak() throws Exception {
    for (int round = 0; round < ROUNDS; round++) {
      runs.clear();
      started.clear();
      blocking.clear();
      round(dir.resolve("round-" + round), round);
    }
  }

  private CompletableFuture<Void> started(String callId) {
    return started.computeIfAbsent(callId, k -> new CompletableFuture<>());
  }

  private void round(Path stateDirPath, long seed) throws Exception {
    Files.createDirectories(stateDirPath);
    TestHandler pay =
        new TestHandler(
            "pay",
            "1.0.0",
            64,
            SideEffectClass.NON_IDEMPOTENT_WRITE,
            call -> {
              runs.computeIfAbsent(call.callId(), k -> new AtomicInteger()).incrementAndGet();
              started(call.callId()).complete(null);
              if (blocking.containsKey(call.callId())) {
                try {
                  new CountDownLatch(1).await(); // runs until the cancel interrupts it
                } catch (InterruptedException e) {
                  return ToolResult.json("{\"interrupted\":true}"); // never sent
                }
              }
              LockSupport.parkNanos(
                  java.util.concurrent.ThreadLocalRandom.current()
                      .nextLong(200_000)); // a little work
              return ToolResult.json("{\"paid\":\"" + call.callId() + "\"}");
            });
    TestHandler fence =
        TestHandler.of(
            "fence",
            128,
            call -> {
              started(call.callId()).complete(null);
              return ToolResult.json("{}");
            });
    try (StateDir stateDir = StateDir.open(stateDirPath);
        DurableOutbox durable = DurableOutbox.open(stateDir, DurableOutbox.Options.defaults());
        ExecutorScheduler timers = new ExecutorScheduler("stress-timers");
        LocalRuntime rt =
            LocalRuntime.builder()
                .port(0)
                .eventLogCapacity(200_000)
                // Crossing mode: forgotten at once, the cancel 1 ms later, as the real runtime
                // does.
                .cancelDelay(Duration.ofMillis(1))
                .start()) {
      GatedOutbox outbox = new GatedOutbox(durable);
      WorkOptions options = WorkOptions.defaults(rt.target(), new WorkerIdentity("w1", "", ""));
      try (WorkClient client =
          new WorkClient(
              options, TestHandler.catalog(pay, fence), outbox, timers, bound -> bound / 2)) {
        client.start();
        Await.until("registered", client::registered, WAIT);
        Dispatcher d = client.dispatcher();
        AtomicInteger cancelled = new AtomicInteger();
        Lanes.run(
            LANES,
            CALLS / LANES,
            seed,
            (l, i, random) -> {
              if (oneCall(rt, outbox, durable, random, "st-" + seed + "-" + l + "-" + i)) {
                cancelled.incrementAndGet();
              }
            });

        assertThat(rt.events().stream().filter(e -> e.direction() == Event.Direction.END))
            .as("streams ended (a NOT_FOUND is a result sent after its cancel)")
            .isEmpty();
        assertThat(client.reconnects()).isZero();
        assertThat(runs.entrySet())
            .as("handlers run twice for one call id")
            .allSatisfy(e -> assertThat(e.getValue().get()).as(e.getKey()).isEqualTo(1));
        assertThat(cancelled.get()).as("cancelled calls").isGreaterThan(CALLS / 2);
        Await.until(
            "every handler returned", () -> d.runningApart() == 0 && d.runningCount() == 0, WAIT);
        assertThat(d.busy("pay@1.0.0")).as("slots left taken").isZero();
        assertThat(d.busy("fence@1.0.0")).isZero();
        assertThat(rt.worker("w1").orElseThrow().busy("pay@1.0.0")).isZero();
        // What may stay queued belongs to the stream: heartbeat, watchdog, orphan window.
        assertThat(timers.queued()).as("timers left queued").isLessThanOrEqualTo(3);
      }
    }
  }

  /** One call cancelled at a random instant of its life, or not at all; true if cancelled. */
  private boolean oneCall(
      LocalRuntime rt,
      GatedOutbox outbox,
      DurableOutbox durable,
      SplittableRandom random,
      String callId)
      throws Exception {
    Moment at = Moment.values()[random.nextInt(Moment.values().length)];
    String session = "sess-" + callId;
    // An hour ahead: never reached, it only makes some calls carry a deadline.
    long deadline = random.nextInt(3) == 0 ? System.currentTimeMillis() + 3_600_000 : 0;
    Call call =
        new Call(
            callId,
            session,
            "av",
            1,
            "pay",
            "1.0.0",
            "{\"amount\":1}".getBytes(),
            "non_idempotent_write",
            deadline);
    if (at == Moment.HANDLER) {
      blocking.put(callId, true);
    }
    outbox.gate(callId);
    CompletableFuture<Outcome> f = rt.dispatch(call);
    GatedOutbox.Write intent = outbox.intentEntered(callId).get(30, TimeUnit.SECONDS);
    if (at == Moment.INTENT) {
      cancel(rt, session, callId);
      intent.proceed();
      assertCancelled(f);
      durable.sync(); // the intent is written: its end is posted to the dispatcher, before...
      assertThat(durable.wasInterrupted(callId)).as("it never ran").isFalse();
      assertThat(runs).doesNotContainKey(callId);
      CompletableFuture<Outcome> again = rt.dispatch(call); // ...this invoke: run, once
      outbox.holdEntered(callId).get(30, TimeUnit.SECONDS).proceed();
      assertThat(again.get(30, TimeUnit.SECONDS)).isInstanceOf(Outcome.Result.class);
      return true;
    }
    pause(random);
    intent.proceed();
    if (at == Moment.HANDLER) {
      started(callId).get(30, TimeUnit.SECONDS);
      cancel(rt, session, callId);
      assertCancelled(f);
      assertRefused(rt.dispatch(call));
      return true;
    }
    GatedOutbox.Write hold = outbox.holdEntered(callId).get(30, TimeUnit.SECONDS);
    if (at == Moment.HOLD) {
      cancel(rt, session, callId);
      hold.proceed();
      assertCancelled(f);
      Await.until("orphaned " + callId, () -> durable.isOrphaned(callId), WAIT);
      // Invoked again, the held result answers: the handler is not run again.
      assertThat(rt.dispatch(call).get(30, TimeUnit.SECONDS)).isInstanceOf(Outcome.Result.class);
      return true;
    }
    pause(random);
    hold.proceed();
    assertThat(f.get(30, TimeUnit.SECONDS)).isInstanceOf(Outcome.Result.class);
    return false;
  }

  /**
   * Cancels the call's session, then waits until the worker has taken the cancel in: a fence call
   * dispatched after it has reached its handler.
   */
  private void cancel(LocalRuntime rt, String session, String callId) throws Exception {
    rt.cancelSession(session);
    String fenceId = "fence-" + callId;
    CompletableFuture<Outcome> fence =
        rt.dispatch(Call.of(fenceId, "fence-" + session, "fence", "1.0.0", "{}"));
    started(fenceId).get(30, TimeUnit.SECONDS);
    assertThat(fence.get(30, TimeUnit.SECONDS)).isInstanceOf(Outcome.Result.class);
  }

  private static void assertCancelled(CompletableFuture<Outcome> f) throws Exception {
    assertThat(f.get(30, TimeUnit.SECONDS))
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> assertThat(e.kind()).isEqualTo(Outcome.DispatchError.Kind.CANCELLED));
  }

  /** A write cancelled mid-run, invoked again, is refused rather than run a second time. */
  private static void assertRefused(CompletableFuture<Outcome> f) throws Exception {
    assertThat(f.get(30, TimeUnit.SECONDS))
        .isInstanceOfSatisfying(
            Outcome.ToolError.class,
            e -> assertThat(e.code()).isEqualTo("previous_attempt_interrupted"));
  }

  /** A random result delay of up to half a millisecond, now and then. */
  private static void pause(SplittableRandom random) {
    if (random.nextBoolean()) {
      LockSupport.parkNanos(random.nextLong(500_000));
    }
  }
}
