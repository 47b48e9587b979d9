package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.worker.api.ToolException;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Event;
import dev.phrony.worker.testkit.FakeScheduler;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The worker's rules (protocol.md part 3) over real gRPC on loopback, against a {@link
 * LocalRuntime} that behaves like the real runtime, sharp edges included. Each test names the rule
 * it pins; without the rule, the runtime would end a stream, lose a call or run a handler twice,
 * and the test would fail.
 */
class WorkRulesTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final Pattern SLEEP = Pattern.compile("\"sleep_ms\"\\s*:\\s*(\\d+)");

  private final List<AutoCloseable> closeables = new ArrayList<>();
  private final MemoryOutbox outbox = new MemoryOutbox();
  private final CountDownLatch release = new CountDownLatch(1);
  private final ConcurrentHashMap<String, AtomicInteger> runs = new ConcurrentHashMap<>();

  /** heartbeat_acks the worker has handled (the runtime's log only says they were sent). */
  private final AtomicInteger acksSeen = new AtomicInteger();

  @AfterEach
  void tearDown() throws Exception {
    release.countDown();
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  // ---- fixtures ----

  private LocalRuntime runtime(Duration leaseTtl) {
    return runtime(leaseTtl, InstantSource.system());
  }

  /** A runtime whose leases run on {@code clock} (the worker's fake scheduler's, in tests). */
  private LocalRuntime runtime(Duration leaseTtl, InstantSource clock) {
    LocalRuntime rt =
        LocalRuntime.builder()
            .port(0)
            .leaseTtl(leaseTtl)
            .clock(clock)
            .shutdownGrace(Duration.ofSeconds(1))
            .start();
    closeables.add(rt);
    return rt;
  }

  /** echo@1.0.0: returns args, sleeping sleep_ms; block@1.0.0 waits for the test. */
  private HandlerCatalog catalog(int maxConcurrency) {
    TestHandler echo =
        TestHandler.of(
            "echo",
            maxConcurrency,
            call -> {
              count(call.callId());
              Matcher m = SLEEP.matcher(new String(call.argsBytes(), StandardCharsets.UTF_8));
              if (m.find()) { // a handler that takes time, as a real one does; no test waits on it
                Thread.sleep(Long.parseLong(m.group(1)));
              }
              return ToolResult.json(call.argsBytes());
            });
    TestHandler block =
        TestHandler.of(
            "block",
            maxConcurrency,
            call -> {
              count(call.callId());
              release.await();
              return ToolResult.json("{\"released\":true}");
            });
    TestHandler stubborn =
        TestHandler.of(
            "stubborn",
            1,
            call -> {
              count(call.callId());
              while (true) {
                try {
                  release.await();
                  return ToolResult.json("{\"late\":true}");
                } catch (InterruptedException ignored) {
                  // ignores cancellation on purpose, like a badly written handler
                }
              }
            });
    TestHandler big =
        TestHandler.of(
            "big",
            4,
            call -> ToolResult.text("x".repeat(WorkOptions.DEFAULT_MAX_RESULT_BYTES + 1)));
    TestHandler size = TestHandler.of("size", 4, call -> ToolResult.of(call.argsBytes().length));
    TestHandler fail =
        TestHandler.of(
            "fail",
            4,
            call -> {
              throw new ToolException("invalid_args", "city is required");
            });
    return TestHandler.catalog(echo, block, stubborn, big, size, fail);
  }

  private void count(String callId) {
    runs.computeIfAbsent(callId, k -> new AtomicInteger()).incrementAndGet();
  }

  private int runsOf(String callId) {
    AtomicInteger n = runs.get(callId);
    return n == null ? 0 : n.get();
  }

  /** A started worker; {@code timers} null means real timers on the system clock. */
  private WorkClient worker(LocalRuntime rt, String workerId, FakeScheduler timers) {
    WorkOptions options =
        WorkOptions.defaults(rt.target(), new WorkerIdentity(workerId, "test", "sha256:test"))
            .withBackoff(Duration.ofMillis(20), Duration.ofMillis(200))
            .withDrainTimeout(Duration.ofSeconds(10));
    WorkClient client =
        new WorkClient(
            options,
            catalog(4),
            outbox,
            timers,
            bound -> bound / 2,
            new WorkerMetrics() {
              @Override
              public void heartbeatRoundTrip(Duration roundTrip) {
                acksSeen.incrementAndGet(); // the worker has taken the ack in
              }
            });
    closeables.add(client);
    client.start();
    return client;
  }

  private WorkClient worker(LocalRuntime rt) {
    WorkClient c = worker(rt, "w1", null);
    Await.until("registered", c::registered, WAIT);
    return c;
  }

  /**
   * Waits for {@code condition} while moving fake time on in small steps: the reconnect backoff and
   * every other timer of the worker only run when its time moves.
   */
  private static void advanceUntil(FakeScheduler timers, String what, BooleanSupplier condition) {
    Await.until(
        what,
        () -> {
          if (condition.getAsBoolean()) {
            return true;
          }
          timers.advance(Duration.ofMillis(10));
          return condition.getAsBoolean();
        },
        WAIT);
  }

  private static long heartbeatAcks(LocalRuntime rt, long streamId) {
    return rt.events().stream()
        .filter(e -> e.streamId() == streamId)
        .filter(Event.out(WorkServerMsg.BodyCase.HEARTBEAT_ACK))
        .count();
  }

  private static Outcome await(CompletableFuture<Outcome> f) throws Exception {
    return f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
  }

  private static String text(Outcome o) {
    assertThat(o).isInstanceOf(Outcome.Result.class);
    return o.text();
  }

  private static List<Event> streamEnds(LocalRuntime rt, Status.Code code) {
    return rt.events().stream()
        .filter(
            e ->
                e.direction() == Event.Direction.END
                    && e.status() != null
                    && e.status().getCode() == code)
        .toList();
  }

  private static long registersOn(LocalRuntime rt, long streamId) {
    return rt.events().stream()
        .filter(e -> e.streamId() == streamId)
        .filter(Event.in(WorkClientMsg.BodyCase.REGISTER))
        .count();
  }

  // ---- rule 1: liveness ----

  @Test
  void rule1_heartbeats_keep_the_lease_alive_past_several_ttls() throws Exception {
    FakeScheduler timers = new FakeScheduler();
    LocalRuntime rt = runtime(Duration.ofSeconds(2), timers.clock());
    WorkClient c = worker(rt, "w1", timers);
    Await.until("registered", c::registered, WAIT);
    long stream = rt.worker("w1").orElseThrow().streamId();
    for (int i = 1; i <= 4; i++) {
      timers.advance(Duration.ofSeconds(1)); // TTL/2: a heartbeat is due
      int n = i;
      Await.until(
          "heartbeat ack " + i, () -> heartbeatAcks(rt, stream) >= n && acksSeen.get() >= n, WAIT);
    }
    // Two whole TTLs of the runtime's clock passed: without heartbeats the lease had expired.
    assertThat(rt.worker("w1")).hasValueSatisfying(w -> assertThat(w.leaseExpired()).isFalse());
    assertThat(c.reconnects()).isZero();
    assertThat(text(await(rt.dispatch(Call.of("echo", "1.0.0", "{\"a\":1}")))))
        .isEqualTo("{\"a\":1}");
  }

  @Test
  void rule1_invoke_before_registered_is_served() throws Exception {
    LocalRuntime rt = runtime(Duration.ofSeconds(30));
    // Queued before any worker exists: the runtime hands it out during register.
    CompletableFuture<Outcome> queued = rt.dispatch(Call.of("echo", "1.0.0", "{\"early\":1}"));
    Await.until("call queued", () -> rt.queues().getOrDefault("echo@1.0.0", 0) == 1, WAIT);
    worker(rt, "w1", null);
    assertThat(text(await(queued))).isEqualTo("{\"early\":1}");
    List<Event> out =
        rt.events().stream()
            .filter(
                Event.out(WorkServerMsg.BodyCase.INVOKE)
                    .or(Event.out(WorkServerMsg.BodyCase.REGISTERED)))
            .toList();
    assertThat(out.getFirst().type()).isEqualTo("invoke");
  }

  @Test
  void rule1_no_heartbeat_ack_for_a_ttl_means_reconnect() throws Exception {
    FakeScheduler timers = new FakeScheduler();
    LocalRuntime rt = runtime(Duration.ofSeconds(30), timers.clock());
    WorkClient c = worker(rt, "w1", timers);
    Await.until("registered", c::registered, WAIT);
    rt.loseHeartbeats(true);
    timers.advance(Duration.ofSeconds(15)); // a heartbeat goes out and is lost
    assertThat(c.reconnects()).isZero();
    timers.advance(Duration.ofMillis(14_999));
    assertThat(c.reconnects()).as("still within the TTL").isZero();
    rt.loseHeartbeats(false);
    timers.advance(Duration.ofMillis(1)); // a whole TTL without an ack: the stream is dead
    advanceUntil(timers, "reconnected", () -> c.reconnects() >= 1 && c.registered());
    assertThat(rt.worker("w1")).hasValueSatisfying(w -> assertThat(w.connected()).isTrue());
    assertThat(text(await(rt.dispatch(Call.of("echo", "1.0.0", "{}"))))).isEqualTo("{}");
  }

  // ---- rule 2 and 7: one worker id, old stream closed first, one register per stream ----

  @Test
  void rule2_reconnects_keep_the_worker_id_and_close_the_old_stream_first() throws Exception {
    FakeScheduler timers = new FakeScheduler();
    LocalRuntime rt = runtime(Duration.ofSeconds(2), timers.clock());
    WorkClient c = worker(rt, "w1", timers);
    Await.until("registered", c::registered, WAIT);
    long firstStream = rt.worker("w1").orElseThrow().streamId();
    rt.loseHeartbeats(true);
    timers.advance(Duration.ofSeconds(2)); // watchdog: our side ends the stream
    rt.loseHeartbeats(false);
    advanceUntil(
        timers,
        "re-registered on a new stream",
        () ->
            rt.worker("w1").filter(w -> w.streamId() != firstStream && w.connected()).isPresent());
    long secondStream = rt.worker("w1").orElseThrow().streamId();
    Await.until("worker saw registered", c::registered, WAIT);
    // Had the new stream registered before the old one closed, the old close would have removed
    // the new registration (the close-ordering hazard), and the next heartbeat would end it.
    Event oldEnd =
        rt.events().stream()
            .filter(e -> e.streamId() == firstStream && e.direction() == Event.Direction.END)
            .findFirst()
            .orElseThrow();
    Event newRegister =
        rt.events().stream()
            .filter(e -> e.streamId() == secondStream)
            .filter(Event.in(WorkClientMsg.BodyCase.REGISTER))
            .findFirst()
            .orElseThrow();
    assertThat(oldEnd.seq()).isLessThan(newRegister.seq());
    timers.advance(Duration.ofSeconds(1)); // time for a heartbeat on the new stream
    Await.until(
        "heartbeat acked on the new stream", () -> heartbeatAcks(rt, secondStream) >= 1, WAIT);
    assertThat(streamEnds(rt, Status.Code.NOT_FOUND)).isEmpty();
    assertThat(registersOn(rt, firstStream)).isEqualTo(1);
    assertThat(registersOn(rt, secondStream)).isEqualTo(1);
  }

  // ---- rule 3: results only on the stream that delivered the invoke ----

  @Test
  void rule3_a_result_from_an_earlier_stream_is_held_advertised_and_orphaned_not_sent()
      throws Exception {
    FakeScheduler timers = new FakeScheduler();
    LocalRuntime rt = runtime(Duration.ofSeconds(30), timers.clock());
    WorkClient c = worker(rt, "w1", timers);
    Await.until("registered", c::registered, WAIT);
    Call call = Call.of("block", "1.0.0", "{}");
    CompletableFuture<Outcome> first = rt.dispatch(call);
    Await.until("running", () -> runsOf(call.callId()) == 1, WAIT);
    long beforeRestart = rt.events().stream().mapToLong(Event::seq).max().orElse(-1);
    rt.restart(); // the runtime forgets the call: indeterminate
    assertThat(await(first))
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> assertThat(e.kind()).isEqualTo(Outcome.DispatchError.Kind.INDETERMINATE));
    advanceUntil(
        timers,
        "re-registered",
        () ->
            c.registered()
                && rt.events().stream()
                    .anyMatch(
                        e ->
                            e.seq() > beforeRestart
                                && Event.out(WorkServerMsg.BodyCase.REGISTERED).test(e)));
    Event register =
        rt.events().stream()
            .filter(Event.in(WorkClientMsg.BodyCase.REGISTER))
            .reduce((a, b) -> b)
            .orElseThrow();
    assertThat(register.clientMsg().getRegister().getInFlightList())
        .extracting(f -> f.getCallId())
        .contains(call.callId());
    release.countDown(); // finishes after the reconnect: must not go out on the new stream
    Await.until("held", () -> outbox.find(call.callId()).isPresent(), WAIT);
    assertThat(outbox.isOrphaned(call.callId())).as("the runtime may still ask for it").isFalse();
    // A lease TTL passes without an ack or a re-invoke (heartbeats acked on the way, so the
    // stream itself stays up).
    long stream = rt.worker("w1").orElseThrow().streamId();
    int reconnects = c.reconnects();
    int acks = acksSeen.get();
    timers.advance(Duration.ofSeconds(15));
    Await.until(
        "heartbeat acked", () -> heartbeatAcks(rt, stream) >= 1 && acksSeen.get() > acks, WAIT);
    assertThat(outbox.isOrphaned(call.callId())).isFalse();
    timers.advance(Duration.ofSeconds(15));
    Await.until("orphaned after a TTL", () -> outbox.isOrphaned(call.callId()), WAIT);
    assertThat(c.reconnects()).as("the stream stayed up").isEqualTo(reconnects);
    assertThat(
            rt.events().stream()
                .filter(Event.in(WorkClientMsg.BodyCase.RESULT))
                .filter(e -> e.callId().equals(call.callId())))
        .isEmpty();
    assertThat(streamEnds(rt, Status.Code.NOT_FOUND)).isEmpty();
    assertThat(text(await(rt.dispatch(Call.of("echo", "1.0.0", "{}"))))).isEqualTo("{}");
  }

  @Test
  void rule3_a_held_result_the_runtime_recorded_is_acked_through_in_flight() throws Exception {
    LocalRuntime rt = runtime(Duration.ofSeconds(30));
    rt.withholdResultAcks(true);
    WorkClient c = worker(rt);
    Call call = Call.of("echo", "1.0.0", "{\"n\":1}");
    assertThat(text(await(rt.dispatch(call)))).isEqualTo("{\"n\":1}");
    assertThat(outbox.find(call.callId())).isPresent(); // no ack yet: still held
    rt.withholdResultAcks(false);
    rt.restart();
    // The ack for an in_flight call may come before registered: it is the runtime's first answer.
    Await.until("acked via in_flight", () -> outbox.find(call.callId()).isEmpty(), WAIT);
    Await.until("registered again", c::registered, WAIT);
  }

  // ---- rule 4: cancel ----

  @Test
  void rule4_cancel_interrupts_sends_nothing_and_the_stream_survives() throws Exception {
    LocalRuntime rt = runtime(Duration.ofSeconds(30));
    WorkClient c = worker(rt);
    Call call = Call.of("call-1", "session-a", "stubborn", "1.0.0", "{}");
    CompletableFuture<Outcome> f = rt.dispatch(call);
    Await.until("running", () -> runsOf("call-1") == 1, WAIT);
    rt.cancelSession("session-a");
    assertThat(await(f))
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> assertThat(e.kind()).isEqualTo(Outcome.DispatchError.Kind.CANCELLED));
    // The stubborn handler is still running, but its slot (max 1) is free: the next call runs.
    Call next = Call.of("call-2", "session-b", "stubborn", "1.0.0", "{}");
    CompletableFuture<Outcome> second = rt.dispatch(next);
    Await.until("second runs", () -> runsOf("call-2") == 1, WAIT);
    release.countDown(); // both handlers return; only the second may be sent
    assertThat(text(await(second))).isEqualTo("{\"late\":true}");
    Await.until("first finished apart", () -> c.dispatcher().runningApart() == 0, WAIT);
    assertThat(
            rt.events().stream()
                .filter(Event.in(WorkClientMsg.BodyCase.RESULT))
                .filter(e -> e.callId().equals("call-1")))
        .isEmpty();
    assertThat(streamEnds(rt, Status.Code.NOT_FOUND)).isEmpty();
    assertThat(rt.worker("w1").orElseThrow().connected()).isTrue();
  }

  // ---- rule 5: one run per call id ----

  @Test
  void rule5_a_reinvoke_of_a_running_call_attaches_to_it() throws Exception {
    LocalRuntime rt = runtime(Duration.ofSeconds(30));
    WorkClient c = worker(rt);
    Call call = Call.of("block", "1.0.0", "{}");
    CompletableFuture<Outcome> first = rt.dispatch(call);
    Await.until("running", () -> runsOf(call.callId()) == 1, WAIT);
    rt.restart();
    await(first); // indeterminate
    Await.until("re-registered", c::registered, WAIT);
    // A recovering runtime dispatches the same call id again while it still runs here.
    CompletableFuture<Outcome> again = rt.dispatch(call);
    Await.until(
        "invoked twice",
        () ->
            rt.events().stream()
                    .filter(Event.out(WorkServerMsg.BodyCase.INVOKE))
                    .filter(e -> e.callId().equals(call.callId()))
                    .count()
                == 2,
        WAIT);
    release.countDown();
    assertThat(text(await(again))).isEqualTo("{\"released\":true}");
    assertThat(runsOf(call.callId())).isEqualTo(1);
  }

  @Test
  void rule5_a_reinvoke_of_a_held_call_gets_the_held_result() throws Exception {
    LocalRuntime rt = runtime(Duration.ofSeconds(30));
    WorkClient c = worker(rt);
    Call call = Call.of("block", "1.0.0", "{}");
    CompletableFuture<Outcome> first = rt.dispatch(call);
    Await.until("running", () -> runsOf(call.callId()) == 1, WAIT);
    rt.restart();
    await(first);
    Await.until("re-registered", c::registered, WAIT);
    release.countDown();
    Await.until("held", () -> outbox.find(call.callId()).isPresent(), WAIT);
    assertThat(text(await(rt.dispatch(call)))).isEqualTo("{\"released\":true}");
    assertThat(runsOf(call.callId())).isEqualTo(1);
    Await.until("acked and released", () -> outbox.find(call.callId()).isEmpty(), WAIT);
  }

  // ---- rule 6: slots ----

  @Test
  void rule6_handlers_run_concurrently_up_to_max_concurrency() throws Exception {
    LocalRuntime rt = runtime(Duration.ofSeconds(30));
    WorkClient c = worker(rt);
    List<CompletableFuture<Outcome>> calls = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      calls.add(rt.dispatch(Call.of("block", "1.0.0", "{}")));
    }
    Await.until("4 running", () -> c.dispatcher().busy("block@1.0.0") == 4, WAIT);
    Await.until("4 handlers running", () -> runs.size() == 4, WAIT);
    assertThat(rt.queues().getOrDefault("block@1.0.0", 0)).isEqualTo(2);
    assertThat(c.dispatcher().busy("block@1.0.0")).isEqualTo(4);
    release.countDown();
    for (var f : calls) {
      assertThat(text(await(f))).isEqualTo("{\"released\":true}");
    }
    assertThat(streamEnds(rt, Status.Code.NOT_FOUND)).isEmpty();
  }

  @Test
  void rule6_a_call_handed_the_slot_of_a_cancelled_one_runs_though_its_invoke_comes_first()
      throws Exception {
    LocalRuntime rt = runtime(Duration.ofSeconds(30));
    WorkClient c = worker(rt);
    CompletableFuture<Outcome> first =
        rt.dispatch(Call.of("call-1", "session-a", "stubborn", "1.0.0", "{}"));
    Await.until("running", () -> runsOf("call-1") == 1, WAIT);
    CompletableFuture<Outcome> second =
        rt.dispatch(Call.of("call-2", "session-b", "stubborn", "1.0.0", "{}"));
    Await.until(
        "waiting at the runtime", () -> rt.queues().getOrDefault("stubborn@1.0.0", 0) == 1, WAIT);
    // The runtime frees call-1's slot, invokes call-2 in it, and only then sends call-1's cancel.
    rt.cancelSession("session-a");
    assertThat(await(first)).isInstanceOf(Outcome.DispatchError.class);
    Await.until("second runs", () -> runsOf("call-2") == 1, WAIT);
    release.countDown();
    assertThat(text(await(second))).isEqualTo("{\"late\":true}");
    List<Event> invokes =
        rt.events().stream()
            .filter(e -> e.callId().equals("call-2") || e.callId().equals("call-1"))
            .filter(e -> e.direction() == Event.Direction.OUT)
            .toList();
    assertThat(invokes)
        .extracting(Event::callId)
        .as("what the runtime sent, in order")
        .containsSubsequence("call-1", "call-2", "call-1");
    assertThat(streamEnds(rt, Status.Code.NOT_FOUND)).isEmpty();
    Await.until("first finished apart", () -> c.dispatcher().runningApart() == 0, WAIT);
  }

  // ---- rule 8: sizes ----

  @Test
  void rule8_an_oversized_payload_becomes_an_error_and_a_large_invoke_is_accepted()
      throws Exception {
    LocalRuntime rt = runtime(Duration.ofSeconds(30));
    worker(rt);
    assertThat(await(rt.dispatch(Call.of("big", "1.0.0", "{}"))))
        .isInstanceOfSatisfying(
            Outcome.ToolError.class, e -> assertThat(e.code()).isEqualTo("result_too_large"));
    String large = "{\"blob\":\"" + "y".repeat(6 * 1024 * 1024) + "\"}";
    assertThat(text(await(rt.dispatch(Call.of("size", "1.0.0", large)))))
        .isEqualTo(Integer.toString(large.length()));
    assertThat(rt.worker("w1").orElseThrow().connected()).isTrue();
  }

  // ---- outcomes ----

  @Test
  void tool_errors_and_deadlines_reach_the_model_as_tool_errors() throws Exception {
    LocalRuntime rt = runtime(Duration.ofSeconds(30));
    worker(rt);
    assertThat(await(rt.dispatch(Call.of("fail", "1.0.0", "{}"))))
        .isInstanceOfSatisfying(
            Outcome.ToolError.class,
            e -> {
              assertThat(e.code()).isEqualTo("invalid_args");
              assertThat(e.message()).isEqualTo("city is required");
            });
  }

  @Test
  void a_call_past_its_deadline_ends_as_a_deadline_exceeded_tool_error() throws Exception {
    FakeScheduler timers = new FakeScheduler();
    LocalRuntime rt = runtime(Duration.ofSeconds(30), timers.clock());
    WorkClient worker = worker(rt, "w1", timers);
    advanceUntil(timers, "registered", worker::registered);
    Call c = Call.of("block", "1.0.0", "{}");
    Call withDeadline =
        new Call(
            c.callId(),
            c.sessionId(),
            c.agentVersionId(),
            c.turn(),
            c.tool(),
            c.version(),
            c.args(),
            "read_only",
            timers.clock().millis() + 200);
    CompletableFuture<Outcome> outcome = rt.dispatch(withDeadline);
    Await.until("the handler runs", () -> runsOf(c.callId()) == 1, WAIT);

    timers.advance(Duration.ofMillis(199));
    assertThat(outcome).isNotDone();
    timers.advance(Duration.ofMillis(1)); // the worker's deadline timer: no real time passes
    assertThat(await(outcome))
        .isInstanceOfSatisfying(
            Outcome.ToolError.class, e -> assertThat(e.code()).isEqualTo("deadline_exceeded"));
  }

  // ---- rule 9 and NOT_FOUND ----

  @Test
  void not_found_on_heartbeat_leads_to_a_clean_reconnect() throws Exception {
    LocalRuntime rt = runtime(Duration.ofSeconds(2));
    WorkClient c = worker(rt);
    long firstStream = rt.worker("w1").orElseThrow().streamId();
    // Another stream registering the same id, then closing, removes our registration
    // (the close-ordering hazard); our next heartbeat is answered with NOT_FOUND.
    try (RawWorkClient impostor = RawWorkClient.connect(rt.target())) {
      impostor.register("w1");
      impostor.awaitRegistered(WAIT);
    }
    Await.until(
        "our stream ended NOT_FOUND", () -> !streamEnds(rt, Status.Code.NOT_FOUND).isEmpty(), WAIT);
    Await.until(
        "registered again",
        () ->
            rt.worker("w1")
                .filter(w -> w.connected() && w.streamId() > firstStream + 1)
                .isPresent(),
        WAIT);
    Await.until("worker registered", c::registered, WAIT);
    assertThat(text(await(rt.dispatch(Call.of("echo", "1.0.0", "{}"))))).isEqualTo("{}");
  }

  @Test
  void a_thousand_calls_survive_a_graceful_restart_and_a_crash_of_the_runtime() throws Exception {
    LocalRuntime rt = runtime(Duration.ofSeconds(3));
    WorkClient c = worker(rt);
    List<CompletableFuture<Outcome>> calls = new ArrayList<>();
    for (int i = 0; i < 1_000; i++) {
      calls.add(rt.dispatch(Call.of("echo", "1.0.0", "{\"sleep_ms\":" + (i % 7) + "}")));
      if (i == 300) {
        rt.restart();
      }
      if (i == 650) {
        rt.crash();
        rt.start();
      }
    }
    java.util.Map<String, Outcome> outcomes = new java.util.HashMap<>();
    for (var f : calls) {
      Outcome o = await(f);
      assertThat(o).isNotInstanceOf(Outcome.ToolError.class);
      outcomes.put(o.callId(), o);
    }
    assertThat(outcomes).hasSize(1_000);
    assertThat(outcomes.values()).filteredOn(o -> o instanceof Outcome.Result).isNotEmpty();
    // A stream the runtime ended with NOT_FOUND may only name a call the runtime had already
    // given up (its registry dropped at shutdown, before the stream itself ended): never one
    // it still expected.
    for (Event end : streamEnds(rt, Status.Code.NOT_FOUND)) {
      String named =
          outcomes.keySet().stream()
              .filter(id -> end.status().getDescription().contains(id))
              .findFirst()
              .orElseThrow();
      assertThat(outcomes.get(named)).isInstanceOf(Outcome.DispatchError.class);
    }
    // Rule 3: every result went out on the stream that delivered its invoke.
    java.util.Set<String> invokedOn = new java.util.HashSet<>();
    rt.events().stream()
        .filter(Event.out(WorkServerMsg.BodyCase.INVOKE))
        .forEach(e -> invokedOn.add(e.streamId() + "/" + e.callId()));
    rt.events().stream()
        .filter(Event.in(WorkClientMsg.BodyCase.RESULT))
        .forEach(e -> assertThat(invokedOn).contains(e.streamId() + "/" + e.callId()));
    Await.until("registered after all", c::registered, WAIT);
    assertThat(text(await(rt.dispatch(Call.of("echo", "1.0.0", "{}"))))).isEqualTo("{}");
  }
}
