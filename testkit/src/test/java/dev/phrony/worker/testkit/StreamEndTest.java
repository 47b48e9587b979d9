package dev.phrony.worker.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.runtime.v1.WorkServerMsg.BodyCase;
import io.grpc.Status;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class StreamEndTest extends RuntimeTestSupport {

  @Test
  void aCleanEndRemovesTheWorkerAndItsCallsBecomeIndeterminate() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    CompletableFuture<Outcome> future = runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}"));
    w.expectInvoke();

    w.halfClose();

    assertThat(w.awaitEnd().getCode()).isEqualTo(Status.Code.OK);
    assertThat(await(future))
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> {
              assertThat(e.kind()).isEqualTo(Outcome.Kind.INDETERMINATE);
              assertThat(e.message()).isEqualTo("tool dispatch outcome indeterminate");
              assertThat(e.trace().workerId()).isEqualTo("w1");
            });
    assertThat(runtime.workers()).isEmpty();
    Event end = runtime.awaitEvent(Event.end(), TIMEOUT);
    assertThat(end.workerId()).isEqualTo("w1");
    assertThat(end.status().isOk()).isTrue();
  }

  @Test
  void aTransportFailureRemovesTheWorkerAndItsCallsBecomeIndeterminate() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    CompletableFuture<Outcome> future = runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}"));
    w.expectInvoke();

    w.cancel();

    assertThat(await(future))
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> assertThat(e.kind()).isEqualTo(Outcome.Kind.INDETERMINATE));
    assertThat(runtime.workers()).isEmpty();
    assertThat(runtime.awaitEvent(Event.end(), TIMEOUT).status().getCode())
        .isEqualTo(Status.Code.CANCELLED);
  }

  @Test
  void
      aStreamTheRuntimeEndsWithAnErrorLeavesAStaleRegistrationThatFailsCallsAtOnceUntilItsLeaseExpires() {
    ManualClock clock = new ManualClock();
    start(b -> b.scheduler(new FakeScheduler(clock)).queueWait(Duration.ofMillis(200)));
    ScriptedWorker dead = worker().registered("w1", "echo", "1", 1);
    ScriptedWorker live = worker().registered("w2", "echo", "1", 1);
    assertThat(dead.result("never-sent", "{}").awaitEnd().getCode())
        .isEqualTo(Status.Code.NOT_FOUND);

    // Still registered, first in order: calls are routed to it and fail at once (not re-routed to
    // w2).
    WorkerView stale = runtime.worker("w1").orElseThrow();
    assertThat(stale.stale()).isTrue();
    Outcome failed = await(runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}")));
    assertThat(failed)
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> {
              assertThat(e.kind()).isEqualTo(Outcome.Kind.SEND_FAILED);
              assertThat(e.message()).startsWith("send invoke: ");
              assertThat(e.trace().workerId()).isEqualTo("w1");
            });
    assertThat(runtime.worker("w1").orElseThrow().busy("echo@1")).isZero();

    // Once its lease expires it is skipped; the live worker (which keeps heartbeating) gets the
    // calls.
    clock.advance(Duration.ofSeconds(20));
    live.heartbeat().expect(BodyCase.HEARTBEAT_ACK);
    clock.advance(Duration.ofSeconds(11));
    CompletableFuture<Outcome> routed = runtime.dispatch(Call.of("c2", "s", "echo", "1", "{}"));
    assertThat(live.expectInvoke().getCallId()).isEqualTo("c2");
    live.result("c2", "{}");
    assertThat(await(routed).trace().workerId()).isEqualTo("w2");
    assertThat(runtime.worker("w1")).isPresent(); // never removed, only skipped
  }

  @Test
  void registeringTheSameIdAgainReplacesAStaleEntryAtOnce() {
    start();
    ScriptedWorker dead = worker().registered("w1", "echo", "1", 1);
    dead.result("never-sent", "{}").awaitEnd();

    ScriptedWorker again = worker().registered("w1", "echo", "1", 1);
    CompletableFuture<Outcome> future = runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}"));

    assertThat(again.expectInvoke().getCallId()).isEqualTo("c1");
    again.result("c1", "{}");
    assertThat(await(future)).isInstanceOf(Outcome.Result.class);
    assertThat(runtime.worker("w1").orElseThrow().connected()).isTrue();
  }

  @Test
  void reRegisteringWhileCallsAreInFlightMakesThemIndeterminate() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    CompletableFuture<Outcome> future = runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}"));
    w.expectInvoke();

    w.registered("w1", "echo", "1", 1); // a second register on the same live stream

    assertThat(await(future))
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> assertThat(e.kind()).isEqualTo(Outcome.Kind.INDETERMINATE));
    Status status = w.result("c1", "{}").awaitEnd();
    assertThat(status.getCode()).isEqualTo(Status.Code.NOT_FOUND);
    assertThat(status.getDescription()).isEqualTo("unknown call_id \"c1\"");
  }

  @Test
  void theOldStreamsLateCloseRemovesTheNewRegistrationAndTheNextHeartbeatEndsTheNewStream() {
    start();
    ScriptedWorker oldStream = worker().registered("w1", "echo", "1", 1);
    ScriptedWorker newStream = worker().registered("w1", "echo", "1", 1); // old stream still open

    oldStream.halfClose();
    assertThat(oldStream.awaitEnd().isOk()).isTrue();

    assertThat(runtime.workers()).isEmpty(); // the new registration went with the old stream
    Status status = newStream.heartbeat().awaitEnd();
    assertThat(status.getCode()).isEqualTo(Status.Code.NOT_FOUND);
    assertThat(status.getDescription()).isEqualTo("unknown worker \"w1\"");
  }
}
