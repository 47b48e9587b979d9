package dev.phrony.worker.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.runtime.v1.WorkServerMsg.BodyCase;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class RoutingTest extends RuntimeTestSupport {

  @Test
  void callsGoToWorkersInRegistrationOrderWhileTheyHaveFreeSlots() {
    start();
    ScriptedWorker w1 = worker().registered("w1", "echo", "1", 2);
    ScriptedWorker w2 = worker().registered("w2", "echo", "1", 1);

    CompletableFuture<Outcome> a = runtime.dispatch(Call.of("a", "s", "echo", "1", "{}"));
    CompletableFuture<Outcome> b = runtime.dispatch(Call.of("b", "s", "echo", "1", "{}"));
    CompletableFuture<Outcome> c = runtime.dispatch(Call.of("c", "s", "echo", "1", "{}"));
    CompletableFuture<Outcome> d = runtime.dispatch(Call.of("d", "s", "echo", "1", "{}"));

    assertThat(w1.expectInvoke().getCallId()).isEqualTo("a");
    assertThat(w1.expectInvoke().getCallId()).isEqualTo("b");
    assertThat(w2.expectInvoke().getCallId()).isEqualTo("c");
    assertThat(runtime.queues()).isEqualTo(Map.of("echo@1", 1));
    assertThat(runtime.worker("w1").orElseThrow().busy("echo@1")).isEqualTo(2);

    w2.result("c", "{\"n\":3}"); // frees w2's slot: the waiting call goes there
    // As in the runtime, the freed slot is refilled before the result is acked.
    assertThat(w2.expectInvoke().getCallId()).isEqualTo("d");
    assertThat(w2.expect(BodyCase.RESULT_ACK).getResultAck().getCallId()).isEqualTo("c");
    assertThat(await(c))
        .isInstanceOfSatisfying(
            Outcome.Result.class,
            r -> {
              assertThat(r.text()).isEqualTo("{\"n\":3}");
              assertThat(r.trace().workerId()).isEqualTo("w2");
            });
    assertThat(runtime.queues()).isEmpty();
    assertThat(a).isNotDone();
    assertThat(b).isNotDone();
    assertThat(d).isNotDone();
  }

  @Test
  void aRetiredRegistrationGetsNoNewCallWhateverItsHeartbeatsAndFinishesWhatItHas() {
    start();
    ScriptedWorker old = worker().registered("w", "echo", "1", 4);
    CompletableFuture<Outcome> running = runtime.dispatch(Call.of("a", "s", "echo", "1", "{}"));
    assertThat(old.expectInvoke().getCallId()).isEqualTo("a");
    ScriptedWorker next = worker().registered("w.g2", "echo", "1", 4);

    assertThat(runtime.retire("w")).isTrue();
    old.heartbeat().expect(BodyCase.HEARTBEAT_ACK); // answered, but renews nothing
    CompletableFuture<Outcome> later = runtime.dispatch(Call.of("b", "s", "echo", "1", "{}"));

    assertThat(next.expectInvoke().getCallId()).as("not the earlier registration").isEqualTo("b");
    assertThat(runtime.worker("w").orElseThrow().leaseExpired()).isTrue();
    old.result("a", "{\"from\":\"old\"}");
    assertThat(old.expect(BodyCase.RESULT_ACK).getResultAck().getCallId()).isEqualTo("a");
    assertThat(await(running).text()).isEqualTo("{\"from\":\"old\"}");
    assertThat(later).isNotDone();
    assertThat(runtime.retire("nobody")).isFalse();
  }

  @Test
  void theInvokeCarriesEveryFieldOfTheCall() {
    start();
    ScriptedWorker w = worker().registered("w1", "weather.get-forecast", "1.0.0", 1);
    Call call =
        Call.sequence("sess-9", "av-3")
            .nextTurn()
            .next("weather.get-forecast", "1.0.0", "{\"city\":\"Oslo\"}")
            .withSideEffectClass("read_only")
            .withDeadline(java.time.Instant.ofEpochMilli(1_900_000_000_000L));

    runtime.dispatch(call);

    var invoke = w.expectInvoke();
    assertThat(invoke.getCallId()).isEqualTo("sess-9:av-3:2:0");
    assertThat(invoke.getSessionId()).isEqualTo("sess-9");
    assertThat(invoke.getAgentVersionId()).isEqualTo("av-3");
    assertThat(invoke.getTurn()).isEqualTo(2);
    assertThat(invoke.getTool()).isEqualTo("weather.get-forecast");
    assertThat(invoke.getVersion()).isEqualTo("1.0.0");
    assertThat(invoke.getArgs().toStringUtf8()).isEqualTo("{\"city\":\"Oslo\"}");
    assertThat(invoke.getSideEffectClass()).isEqualTo("read_only");
    assertThat(invoke.getDeadlineUnixMs()).isEqualTo(1_900_000_000_000L);
  }

  @Test
  void argsDefaultToAnEmptyObject() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);

    runtime.dispatch(Call.of("c1", "s", "echo", "1", null));

    assertThat(w.expectInvoke().getArgs().toStringUtf8()).isEqualTo("{}");
  }

  @Test
  void aCallWaitingLongerThanTheQueueWaitEndsCapacityExhaustedWhenWorkersExist() {
    FakeScheduler timers = new FakeScheduler();
    start(
        b ->
            b.scheduler(timers)
                .queueWait(Duration.ofMillis(200))
                .executionTimeout(Duration.ofSeconds(30)));
    worker().registered("w1", "echo", "1", 1);
    runtime.dispatch(Call.of("busy", "s", "echo", "1", "{}"));
    CompletableFuture<Outcome> waiting =
        runtime.dispatch(Call.of("waiting", "s", "echo", "1", "{}"));

    timers.advance(Duration.ofMillis(199));
    assertThat(waiting).isNotDone();
    timers.advance(Duration.ofMillis(1));
    Outcome outcome = await(waiting);

    assertThat(outcome)
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> {
              assertThat(e.kind()).isEqualTo(Outcome.Kind.CAPACITY_EXHAUSTED);
              assertThat(e.message())
                  .isEqualTo("tool handler capacity exhausted\ncontext deadline exceeded");
              assertThat(e.trace().workerId()).isNull();
              assertThat(e.trace().elapsed())
                  .isEqualTo(Duration.ofMillis(200)); // by the runtime's clock
            });
    assertThat(runtime.queues()).isEmpty();
  }

  @Test
  void aCallWaitingLongerThanTheQueueWaitEndsNoHandlerWhenNoWorkerAdvertisesTheKey() {
    FakeScheduler timers = new FakeScheduler();
    start(b -> b.scheduler(timers).queueWait(Duration.ofMillis(100)));
    worker().registered("w1", "other", "1", 1);
    CompletableFuture<Outcome> waiting = runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}"));

    timers.advance(Duration.ofMillis(100));
    Outcome outcome = await(waiting);

    assertThat(outcome)
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> {
              assertThat(e.kind()).isEqualTo(Outcome.Kind.NO_HANDLER);
              assertThat(e.message())
                  .isEqualTo("no handler registered for tool\ncontext deadline exceeded");
            });
  }

  @Test
  void theQueueHoldsAtMost256CallsPerKeyAndRefusesTheNextAtOnce() {
    start();
    List<CompletableFuture<Outcome>> waiting = new ArrayList<>();
    for (int i = 0; i < 256; i++) {
      waiting.add(runtime.dispatch(Call.of("q" + i, "s", "echo", "1", "{}")));
    }

    Outcome refused = await(runtime.dispatch(Call.of("q256", "s", "echo", "1", "{}")));

    assertThat(refused)
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> {
              assertThat(e.kind()).isEqualTo(Outcome.Kind.QUEUE_FULL);
              assertThat(e.message()).isEqualTo("tool dispatch wait queue full");
            });
    assertThat(runtime.queues()).isEqualTo(Map.of("echo@1", 256));
    assertThat(waiting).noneMatch(CompletableFuture::isDone);
  }

  @Test
  void queuedCallsAreHandedOutAtRegisterSoInvokeMayArriveBeforeRegistered() {
    start();
    CompletableFuture<Outcome> outcome = runtime.dispatch(Call.of("early", "s", "echo", "1", "{}"));
    ScriptedWorker w = worker().register("w1", "echo", "1", 1);

    assertThat(w.next().getBodyCase()).isEqualTo(BodyCase.INVOKE);
    assertThat(w.next().getBodyCase()).isEqualTo(BodyCase.REGISTERED);
    w.result("early", "{}");
    assertThat(await(outcome)).isInstanceOf(Outcome.Result.class);
  }

  @Test
  void aHeartbeatAloneDoesNotDrainTheQueueButTheNextRegisterDoes() {
    ManualClock clock = new ManualClock();
    start(b -> b.clock(clock));
    ScriptedWorker w1 = worker().registered("w1", "echo", "1", 1);
    clock.advance(Duration.ofSeconds(31)); // lease expired: w1 is skipped
    CompletableFuture<Outcome> outcome = runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}"));
    assertThat(runtime.queues()).isEqualTo(Map.of("echo@1", 1));

    w1.heartbeat().expect(BodyCase.HEARTBEAT_ACK); // lease live again, but nothing drains the queue
    assertThat(runtime.queues()).isEqualTo(Map.of("echo@1", 1));

    worker()
        .registered(
            "w2", "unrelated", "1", 1); // any register drains every queue, in registration order
    assertThat(w1.expectInvoke().getCallId()).isEqualTo("c1");
    w1.result("c1", "{}");
    assertThat(await(outcome).trace().workerId()).isEqualTo("w1");
  }

  @Test
  void aNackFreesTheSlotForTheNextWaitingCall() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    CompletableFuture<Outcome> first = runtime.dispatch(Call.of("first", "s", "echo", "1", "{}"));
    runtime.dispatch(Call.of("second", "s", "echo", "1", "{}"));
    w.expectInvoke();

    w.nack("first", "busy", "try later");

    assertThat(w.expectInvoke().getCallId()).isEqualTo("second");
    assertThat(await(first)).isInstanceOf(Outcome.ToolError.class);
  }

  @Test
  void aCallStillRunningWhenTheDispatchBoundPassesIsForgottenAndCancelled() {
    FakeScheduler timers = new FakeScheduler();
    start(b -> b.scheduler(timers).executionTimeout(Duration.ofMillis(200)));
    ScriptedWorker w = worker().registered("w1", "slow", "1", 1);
    CompletableFuture<Outcome> slow = runtime.dispatch(Call.of("slow-1", "s", "slow", "1", "{}"));
    w.expectInvoke();
    timers.advance(Duration.ofMillis(199));
    assertThat(slow).isNotDone();

    timers.advance(Duration.ofMillis(1));
    Outcome outcome = await(slow);

    assertThat(outcome)
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> {
              assertThat(e.kind()).isEqualTo(Outcome.Kind.TIMEOUT);
              assertThat(e.message()).isEqualTo("context deadline exceeded");
              assertThat(e.trace().workerId()).isEqualTo("w1");
            });
    assertThat(w.expect(BodyCase.CANCEL).getCancel().getCallId()).isEqualTo("slow-1");
    assertThat(runtime.worker("w1").orElseThrow().busy("slow@1"))
        .isZero(); // the slot is free again
    // The runtime forgot the call: a late result is for an unknown call.
    Status status = w.result("slow-1", "{}").awaitEnd();
    assertThat(status.getCode()).isEqualTo(Status.Code.NOT_FOUND);
    assertThat(status.getDescription()).isEqualTo("unknown call_id \"slow-1\"");
  }

  @Test
  void theExecutionBoundDefaultsToTheQueueWaitAndCountsFromDispatch() {
    FakeScheduler timers = new FakeScheduler();
    start(b -> b.scheduler(timers).queueWait(Duration.ofMillis(300)));
    assertThat(runtime.executionTimeout()).isEqualTo(Duration.ofMillis(300));
    ScriptedWorker w = worker().registered("w1", "slow", "1", 1);
    CompletableFuture<Outcome> call = runtime.dispatch(Call.of("c1", "s", "slow", "1", "{}"));
    timers.advance(Duration.ofMillis(300));

    Outcome outcome = await(call);

    assertThat(outcome)
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class, e -> assertThat(e.kind()).isEqualTo(Outcome.Kind.TIMEOUT));
    w.expectInvoke();
    WorkServerMsg cancel = w.expect(BodyCase.CANCEL);
    assertThat(cancel.getCancel().getCallId()).isEqualTo("c1");
  }

  @Test
  void cancellingTheDispatchFutureCancelsTheCall() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    CompletableFuture<Outcome> future = runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}"));
    w.expectInvoke();

    future.cancel(true);

    assertThat(w.expect(BodyCase.CANCEL).getCancel().getCallId()).isEqualTo("c1");
    assertThat(runtime.inFlight()).isZero();
  }
}
