package dev.phrony.worker.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.runtime.v1.WorkServerMsg.BodyCase;
import io.grpc.Status;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class ResultTest extends RuntimeTestSupport {

  @Test
  void aResultIsRecordedInTheLedgerThenAcked() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    CompletableFuture<Outcome> future =
        runtime.dispatch(Call.of("c1", "s", "echo", "1", "{\"x\":1}"));
    w.expectInvoke();

    w.result("c1", "{\"echo\":1}");

    assertThat(w.expect(BodyCase.RESULT_ACK).getResultAck().getCallId()).isEqualTo("c1");
    Outcome outcome = await(future);
    assertThat(outcome)
        .isInstanceOfSatisfying(
            Outcome.Result.class,
            r -> {
              assertThat(r.text()).isEqualTo("{\"echo\":1}");
              assertThat(r.trace().callId()).isEqualTo("c1");
              assertThat(r.trace().fromLedger()).isFalse();
            });
    assertThat(runtime.completed("c1")).contains(outcome);
    assertThat(runtime.worker("w1").orElseThrow().busy("echo@1")).isZero();
  }

  @Test
  void anEmptyPayloadReadsAsAnEmptyObject() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    CompletableFuture<Outcome> future = runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}"));
    w.expectInvoke();

    w.result("c1", new byte[0]);

    assertThat(await(future).text()).isEqualTo("{}");
  }

  @Test
  void aResultCarryingAnErrorIsAToolErrorAndIsAcked() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    CompletableFuture<Outcome> future = runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}"));
    w.expectInvoke();

    w.errorResult("c1", "city_unknown", "no such city");

    w.expect(BodyCase.RESULT_ACK);
    assertThat(await(future))
        .isInstanceOfSatisfying(
            Outcome.ToolError.class,
            e -> {
              assertThat(e.text()).isEqualTo("city_unknown: no such city");
              assertThat(e.fromNack()).isFalse();
            });
  }

  @Test
  void aNackCompletesTheCallAsAToolErrorAndGetsNoResultAck() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    CompletableFuture<Outcome> future = runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}"));
    w.expectInvoke();

    w.nack("c1", "over_capacity", "all slots busy").heartbeat();

    // Messages are answered in order: had the nack been acked, the ack would come first.
    w.expect(BodyCase.HEARTBEAT_ACK);
    assertThat(await(future))
        .isInstanceOfSatisfying(
            Outcome.ToolError.class,
            e -> {
              assertThat(e.text()).isEqualTo("over_capacity: all slots busy");
              assertThat(e.fromNack()).isTrue();
            });
    assertThat(runtime.completed("c1")).isPresent();
  }

  @Test
  void aResultForACallTheRuntimeNeverSentEndsTheStreamNotFound() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);

    Status status = w.result("nobody:asked:1:0", "{}").awaitEnd();

    assertThat(status.getCode()).isEqualTo(Status.Code.NOT_FOUND);
    assertThat(status.getDescription()).isEqualTo("unknown call_id \"nobody:asked:1:0\"");
  }

  @Test
  void aNackForAnUnknownCallEndsTheStreamNotFoundEvenWhenTheLedgerHasIt() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    CompletableFuture<Outcome> future = runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}"));
    w.expectInvoke();
    w.result("c1", "{}").expect(BodyCase.RESULT_ACK);
    await(future);

    Status status = w.nack("c1", "late", "too late").awaitEnd();

    assertThat(status.getCode()).isEqualTo(Status.Code.NOT_FOUND);
    assertThat(status.getDescription()).isEqualTo("unknown call_id \"c1\"");
  }

  @Test
  void aRepeatedResultForACompletedCallIsJustAckedAgain() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    CompletableFuture<Outcome> future = runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}"));
    w.expectInvoke();
    w.result("c1", "{\"first\":true}").expect(BodyCase.RESULT_ACK);

    w.result("c1", "{\"second\":true}");

    assertThat(w.expect(BodyCase.RESULT_ACK).getResultAck().getCallId()).isEqualTo("c1");
    assertThat(w.ended()).isFalse();
    assertThat(runtime.completed("c1").orElseThrow().text()).isEqualTo("{\"first\":true}");
    assertThat(await(future).text()).isEqualTo("{\"first\":true}");
  }

  @Test
  void aResultFromAWorkerOtherThanTheOneLeasedEndsThatStreamNotFound() {
    start();
    ScriptedWorker w1 = worker().registered("w1", "echo", "1", 1);
    ScriptedWorker w2 = worker().registered("w2", "echo", "1", 1);
    CompletableFuture<Outcome> future = runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}"));
    w1.expectInvoke();

    Status status = w2.result("c1", "{}").awaitEnd();

    assertThat(status.getCode()).isEqualTo(Status.Code.NOT_FOUND);
    assertThat(status.getDescription())
        .isEqualTo("call_id \"c1\" owned by worker \"w1\", not \"w2\"");
    w1.result("c1", "{}").expect(BodyCase.RESULT_ACK);
    assertThat(await(future)).isInstanceOf(Outcome.Result.class);
  }

  @Test
  void aRepeatDispatchOfACompletedCallIsAnsweredFromTheLedgerWithoutAnyInvoke() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    Call call = Call.of("echo", "1", "{}");
    runtime.dispatch(call);
    w.expectInvoke();
    w.result(call.callId(), "{\"n\":1}").expect(BodyCase.RESULT_ACK);
    long invokesBefore = runtime.events().stream().filter(Event.out(BodyCase.INVOKE)).count();

    Outcome replay = await(runtime.dispatch(call));

    assertThat(replay)
        .isInstanceOfSatisfying(
            Outcome.Result.class,
            r -> {
              assertThat(r.text()).isEqualTo("{\"n\":1}");
              assertThat(r.trace().fromLedger()).isTrue();
              assertThat(r.trace().workerId()).isEqualTo("w1");
            });
    w.heartbeat().expect(BodyCase.HEARTBEAT_ACK); // no invoke came before it
    assertThat(runtime.events().stream().filter(Event.out(BodyCase.INVOKE)).count())
        .isEqualTo(invokesBefore);
  }

  @Test
  void aSecondDispatchOfACallInFlightWaitsForTheSameOutcome() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 2);
    Call call = Call.of("echo", "1", "{}");
    CompletableFuture<Outcome> first = runtime.dispatch(call);
    CompletableFuture<Outcome> second = runtime.dispatch(call);
    w.expectInvoke();

    w.result(call.callId(), "{}");

    assertThat(await(second)).isSameAs(await(first));
    w.expect(BodyCase.RESULT_ACK);
    w.heartbeat().expect(BodyCase.HEARTBEAT_ACK); // only one invoke was sent
  }

  @Test
  void atRegisterEachInFlightCallTheLedgerHasCompletedIsAckedRightAwayBeforeRegistered() {
    start();
    ScriptedWorker first = worker().registered("w1", "echo", "1", 2);
    runtime.dispatch(Call.of("done", "s", "echo", "1", "{}"));
    first.expectInvoke();
    first.result("done", "{}").expect(BodyCase.RESULT_ACK);
    first.halfClose();
    first.awaitEnd();

    ScriptedWorker again =
        worker()
            .register(
                "w1",
                java.util.List.of(ScriptedWorker.handler("echo", "1", 2)),
                "done",
                "unknown-to-runtime");

    assertThat(again.expect(BodyCase.RESULT_ACK).getResultAck().getCallId()).isEqualTo("done");
    again.expect(BodyCase.REGISTERED); // and nothing for the call the runtime does not know
    again.heartbeat().expect(BodyCase.HEARTBEAT_ACK);
  }

  @Test
  void withheldResultAcksStillRecordTheResult() {
    start(b -> b.withholdResultAcks(true));
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    CompletableFuture<Outcome> future = runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}"));
    w.expectInvoke();

    w.result("c1", "{\"kept\":true}").heartbeat();

    w.expect(BodyCase.HEARTBEAT_ACK); // no result_ack before it
    assertThat(await(future).text()).isEqualTo("{\"kept\":true}");
    assertThat(runtime.completed("c1")).isPresent();

    runtime.withholdResultAcks(false);
    w.result("c1", "{\"kept\":true}");
    assertThat(w.expect(BodyCase.RESULT_ACK).getResultAck().getCallId()).isEqualTo("c1");
  }

  @Test
  void aWorkerRegisteringWithACallInFlightElsewhereInItsInFlightListTakesTheCallOver() {
    start();
    ScriptedWorker w1 = worker().registered("w1", "echo", "1", 1);
    CompletableFuture<Outcome> future = runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}"));
    w1.expectInvoke();
    ScriptedWorker w2 =
        worker().register("w2", java.util.List.of(ScriptedWorker.handler("echo", "1", 1)), "c1");
    w2.expect(BodyCase.REGISTERED);

    Status status = w1.result("c1", "{\"from\":\"w1\"}").awaitEnd();
    w2.result("c1", "{\"from\":\"w2\"}");

    assertThat(status.getCode()).isEqualTo(Status.Code.NOT_FOUND);
    assertThat(status.getDescription())
        .isEqualTo("call_id \"c1\" owned by worker \"w2\", not \"w1\"");
    w2.expect(BodyCase.RESULT_ACK);
    assertThat(await(future).text()).isEqualTo("{\"from\":\"w2\"}");
  }
}
