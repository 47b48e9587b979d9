package dev.phrony.worker.dev;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.plugin.LoadProblem;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.FakeScheduler;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.work.WorkClient;
import dev.phrony.worker.work.WorkOptions;
import dev.phrony.worker.work.WorkerIdentity;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * How {@link CallService} bounds calls: the dispatch wait (short here) without a deadline, the
 * deadline with one, and what the outcome says the call was waiting for.
 */
class CallServiceTest {
  private static final Duration WAIT = Duration.ofMillis(400);

  /** The bounds' timers: they run only when a test moves this time on. */
  private final FakeScheduler timers = new FakeScheduler();

  private final List<String> heard = new CopyOnWriteArrayList<>();
  private LocalRuntime runtime;
  private WorkClient worker;
  private CallService calls;

  @BeforeEach
  void start() {
    runtime = LocalRuntime.builder().executionTimeout(Duration.ofMinutes(5)).start();
    worker =
        new WorkClient(
            WorkOptions.defaults(runtime.target(), new WorkerIdentity("w1", "", "")),
            DevFixture.catalog(),
            new MemoryOutbox());
    worker.start();
    Await.until("registered", worker::registered);
    calls =
        new CallService(
            runtime,
            WAIT,
            timers,
            new CallService.Listener() {
              @Override
              public void submitted(Call call) {
                heard.add("call " + call.callId());
              }

              @Override
              public void completed(CallService.Completed c) {
                heard.add(
                    "done " + c.call().callId() + " " + c.outcome().getClass().getSimpleName());
              }
            },
            List.of(
                new LoadProblem(
                    "plugins/greet.jar",
                    "invalid descriptor from handler g.Greet:"
                        + " the input schema is not JSON (it would serve greet.say-hello@1.0.0)"),
                new LoadProblem("plugins/other.jar", "no tool handlers found")));
  }

  @AfterEach
  void stop() {
    calls.close();
    worker.close();
    runtime.close();
  }

  private CallService.Completed await(CompletableFuture<CallService.Completed> f) throws Exception {
    return f.get(30, TimeUnit.SECONDS);
  }

  @Test
  void a_running_call_without_a_deadline_times_out_after_the_dispatch_wait_and_is_cancelled()
      throws Exception {
    CompletableFuture<CallService.Completed> f =
        calls.submit(new CallRequest("hold", "1.0.0", null, "s1", null));
    Await.until("running", () -> runtime.worker("w1").orElseThrow().busy("hold@1.0.0") == 1);
    timers.advance(WAIT.minusMillis(1));
    assertThat(f).isNotDone();
    timers.advance(Duration.ofMillis(1));
    CallService.Completed c = await(f);

    assertThat(c.call().deadlineUnixMs()).isZero();
    assertThat(c.outcome())
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> {
              assertThat(e.kind()).isEqualTo(Outcome.Kind.TIMEOUT);
              assertThat(e.message()).isEqualTo("context deadline exceeded");
              assertThat(e.trace().workerId()).isEqualTo("w1");
              assertThat(e.trace().elapsed()).isEqualTo(WAIT);
            });
    assertThat(c.hint())
        .isEqualTo(
            "the call took longer than 400ms (the runtime's dispatch "
                + "wait; give a longer deadline with --timeout)");
    // The runtime forgot it and sent cancel: the worker's slot is free again.
    Await.until("slot freed", () -> runtime.worker("w1").orElseThrow().busy("hold@1.0.0") == 0);
    assertThat(heard).containsExactly("call s1:av-local:1:0", "done s1:av-local:1:0 DispatchError");
  }

  @Test
  void a_call_waiting_for_a_busy_slot_ends_capacity_exhausted() throws Exception {
    CompletableFuture<CallService.Completed> first =
        calls.submit(new CallRequest("hold", "1.0.0", null, "s2", Duration.ofSeconds(20)));
    Await.until("slot taken", () -> runtime.worker("w1").orElseThrow().busy("hold@1.0.0") == 1);

    CompletableFuture<CallService.Completed> waiting =
        calls.submit(new CallRequest("hold", "1.0.0", null, "s3", null));
    Await.until("queued", () -> runtime.queues().getOrDefault("hold@1.0.0", 0) == 1);
    timers.advance(WAIT);
    CallService.Completed second = await(waiting);

    assertThat(second.outcome())
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> {
              assertThat(e.kind()).isEqualTo(Outcome.Kind.CAPACITY_EXHAUSTED);
              assertThat(e.message())
                  .isEqualTo("tool handler capacity exhausted\ncontext deadline exceeded");
              assertThat(e.trace().workerId()).isNull();
            });
    assertThat(second.hint()).isEqualTo("every slot of hold@1.0.0 stayed busy");
    assertThat(calls.cancelSession("s2")).containsExactly("s2:av-local:1:0");
    assertThat(await(first).outcome())
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> assertThat(e.kind()).isEqualTo(Outcome.Kind.CANCELLED));
  }

  @Test
  void a_deadline_is_sent_to_the_worker_and_replaces_the_dispatch_wait() throws Exception {
    CallService.Completed c =
        await(
            calls.submit(
                new CallRequest("echo", "1.0.0", "{\"a\":1}", null, Duration.ofSeconds(5))));

    assertThat(c.call().deadlineUnixMs())
        .isEqualTo(timers.clock().instant().plusSeconds(5).toEpochMilli());
    assertThat(c.outcome()).isInstanceOf(Outcome.Result.class);
    assertThat(c.outcome().text()).isEqualTo("{\"a\":1}");
    assertThat(calls.inFlight()).isZero();
  }

  @Test
  void once_closed_no_call_is_taken() {
    calls.refuseNewCalls();

    assertThatThrownBy(() -> calls.submit(new CallRequest("echo", null, null, null, null)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("dev is shutting down");
  }

  @Test
  void a_key_nobody_serves_fails_at_once_and_names_a_plugin_that_would_serve_it() throws Exception {
    CompletableFuture<CallService.Completed> f =
        calls.submit(new CallRequest("greet.say-hello", "1.0.0", "{}", null, null));
    assertThat(f).as("answered without waiting for the dispatch").isDone();
    CallService.Completed c = f.get();
    assertThat(c.outcome())
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> assertThat(e.kind()).isEqualTo(Outcome.Kind.NO_HANDLER));
    assertThat(c.hint())
        .startsWith("no worker serves greet.say-hello@1.0.0; served: ")
        .endsWith(
            "; it would be served by a plugin that failed to load: plugins/greet.jar"
                + " (invalid descriptor from handler g.Greet: the input schema is not JSON (it"
                + " would serve greet.say-hello@1.0.0))");

    CallService.Completed typo =
        await(calls.submit(new CallRequest("no.such-tool", "9.9.9", "{}", null, null)));
    assertThat(typo.hint())
        .contains("2 plugin(s) failed to load and may have served it: " + "plugins/greet.jar");
    assertThat(runtime.events().stream().filter(e -> "invoke".equals(e.type()))).isEmpty();
  }
}
