package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Event;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.time.ExecutorScheduler;
import java.time.Duration;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * Thousands of calls of an asynchronous handler (started inline on the stream's I/O thread) over
 * real gRPC against a {@link LocalRuntime}: answered at once, answered later from another thread,
 * or cancelled while their stage is pending and then completed anyway. Afterwards no stream ended
 * (a NOT_FOUND would be an outcome sent after its cancel), no slot is left taken on either side,
 * and nothing runs on apart.
 *
 * <p>As in {@link CancelStressTest}, the stage of a call to be cancelled is completed only once the
 * worker has taken the cancel in (a fence call dispatched after it has reached its handler): a
 * cancel crossing a result already on the wire is a race no worker can avoid.
 */
class AsyncCancelStressTest {
  private static final int LANES = 16;
  private static final int CALLS = Integer.getInteger("phrony.stress.calls", 2_000);
  private static final Duration WAIT = Duration.ofSeconds(30);

  private enum Fate {
    AT_ONCE,
    LATER,
    CANCELLED
  }

  private final Map<String, CompletableFuture<ToolResult>> stages = new ConcurrentHashMap<>();
  private final Map<String, Fate> fates = new ConcurrentHashMap<>();

  @Test
  void cancels_of_pending_stages_never_end_a_stream_or_leak() throws Exception {
    AsyncDispatchTest.AsyncHandler handler =
        new AsyncDispatchTest.AsyncHandler(
            call -> {
              if (call.callId().startsWith("fence-") || fates.get(call.callId()) == Fate.AT_ONCE) {
                return CompletableFuture.completedFuture(ToolResult.json("{}"));
              }
              return stages.computeIfAbsent(call.callId(), k -> new CompletableFuture<>());
            });
    try (ExecutorScheduler timers = new ExecutorScheduler("async-stress-timers");
        LocalRuntime rt =
            LocalRuntime.builder()
                .port(0)
                .eventLogCapacity(200_000)
                // Crossing mode: forgotten at once, the cancel 1 ms later, as the real runtime
                // does.
                .cancelDelay(Duration.ofMillis(1))
                .start()) {
      WorkOptions options = WorkOptions.defaults(rt.target(), new WorkerIdentity("w1", "", ""));
      try (WorkClient client =
          new WorkClient(
              options,
              TestHandler.catalog(handler),
              new MemoryOutbox(),
              timers,
              bound -> bound / 2)) {
        client.start();
        Await.until("registered", client::registered, WAIT);
        Dispatcher d = client.dispatcher();
        Lanes.run(
            LANES, CALLS / LANES, 0, (l, i, random) -> oneCall(rt, random, "as-" + l + "-" + i));

        assertThat(rt.events().stream().filter(e -> e.direction() == Event.Direction.END))
            .as("streams ended (a NOT_FOUND is an outcome sent after its cancel)")
            .isEmpty();
        assertThat(client.reconnects()).isZero();
        assertThat(fates.values()).contains(Fate.AT_ONCE, Fate.LATER, Fate.CANCELLED);
        // Inline on the stream's I/O thread; on a thread of the call's own when the thread that
        // admitted it was another (one completing a stage drains the dispatcher's context).
        assertThat(handler.startedOn)
            .as("each started once, inline or on its own thread")
            .hasSize(CALLS / LANES * LANES + fenceCount())
            .allSatisfy(
                t -> assertThat(t.getName()).matches("phrony-work-io.*|phrony-handler.*|call-.*"));
        assertThat(handler.startedOn.stream().filter(t -> t.getName().startsWith("phrony-work-io")))
            .as("most inline")
            .hasSizeGreaterThan(CALLS / 2);
        Await.until("nothing running", () -> d.runningApart() == 0 && d.runningCount() == 0, WAIT);
        assertThat(d.busy("a@1.0.0")).as("slots left taken").isZero();
        assertThat(rt.worker("w1").orElseThrow().busy("a@1.0.0")).isZero();
      }
    }
  }

  private int fenceCount() {
    return (int) fates.values().stream().filter(f -> f == Fate.CANCELLED).count();
  }

  private void oneCall(LocalRuntime rt, SplittableRandom random, String callId) throws Exception {
    Fate fate = Fate.values()[random.nextInt(Fate.values().length)];
    fates.put(callId, fate);
    String session = "sess-" + callId;
    CompletableFuture<Outcome> f = rt.dispatch(Call.of(callId, session, "a", "1.0.0", "{}"));
    switch (fate) {
      case AT_ONCE -> assertThat(f.get(30, TimeUnit.SECONDS)).isInstanceOf(Outcome.Result.class);
      case LATER -> {
        CompletableFuture<ToolResult> stage = stageOf(callId);
        if (random.nextBoolean()) {
          LockSupport.parkNanos(random.nextLong(300_000));
        }
        stage.complete(ToolResult.json("{\"later\":true}"));
        assertThat(f.get(30, TimeUnit.SECONDS)).isInstanceOf(Outcome.Result.class);
      }
      case CANCELLED -> {
        CompletableFuture<ToolResult> stage = stageOf(callId);
        rt.cancelSession(session);
        // Fence: dispatched after the cancel, answered by the worker after it took it in.
        assertThat(
                rt.dispatch(Call.of("fence-" + callId, "fence-" + session, "a", "1.0.0", "{}"))
                    .get(30, TimeUnit.SECONDS))
            .isInstanceOf(Outcome.Result.class);
        assertThat(stage).as("the worker cancelled the handler's stage").isCancelled();
        stage.complete(ToolResult.json("{\"too\":\"late\"}")); // no effect: never sent
        assertThat(f.get(30, TimeUnit.SECONDS))
            .isInstanceOfSatisfying(
                Outcome.DispatchError.class,
                e -> assertThat(e.kind()).isEqualTo(Outcome.DispatchError.Kind.CANCELLED));
      }
    }
  }

  /** The stage the handler returned for {@code callId}, once it has been called. */
  private CompletableFuture<ToolResult> stageOf(String callId) {
    Await.until("started " + callId, () -> stages.containsKey(callId), WAIT);
    return stages.get(callId);
  }
}
