package dev.phrony.worker.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.runtime.v1.WorkServerMsg.BodyCase;
import io.grpc.Status;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class SessionCancelTest extends RuntimeTestSupport {

  @Test
  void cancelSessionForgetsItsCallsThenSendsCancelToTheWorkerRunningEach() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    CompletableFuture<Outcome> running =
        runtime.dispatch(Call.of("s1:av:1:0", "s1", "echo", "1", "{}"));
    CompletableFuture<Outcome> waiting =
        runtime.dispatch(Call.of("s1:av:1:1", "s1", "echo", "1", "{}"));
    CompletableFuture<Outcome> otherSession =
        runtime.dispatch(Call.of("s2:av:1:0", "s2", "echo", "1", "{}"));
    assertThat(w.expectInvoke().getCallId()).isEqualTo("s1:av:1:0");

    runtime.cancelSession("s1");

    assertThat(await(running))
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> {
              assertThat(e.kind()).isEqualTo(Outcome.Kind.CANCELLED);
              assertThat(e.message()).isEqualTo("context canceled");
            });
    assertThat(await(waiting))
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> {
              assertThat(e.kind()).isEqualTo(Outcome.Kind.CANCELLED);
              assertThat(e.message())
                  .isEqualTo("tool handler capacity exhausted\ncontext canceled");
            });
    // The freed slot goes to the other session's call before the cancel is sent, as in the runtime.
    assertThat(w.expectInvoke().getCallId()).isEqualTo("s2:av:1:0");
    assertThat(w.expect(BodyCase.CANCEL).getCancel().getCallId()).isEqualTo("s1:av:1:0");
    assertThat(otherSession).isNotDone();
  }

  @Test
  void aResultAfterTheCancelIsForAnUnknownCallAndEndsTheStreamNotFound() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    runtime.dispatch(Call.of("s1:av:1:0", "s1", "echo", "1", "{}"));
    w.expectInvoke();
    runtime.cancelSession("s1");
    w.expect(BodyCase.CANCEL);

    Status status = w.result("s1:av:1:0", "{}").awaitEnd();

    assertThat(status.getCode()).isEqualTo(Status.Code.NOT_FOUND);
    assertThat(status.getDescription()).isEqualTo("unknown call_id \"s1:av:1:0\"");
    assertThat(runtime.completed("s1:av:1:0")).isEmpty();
  }

  @Test
  void cancellingAnUnknownSessionDoesNothing() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);

    runtime.cancelSession("nobody");

    w.heartbeat().expect(BodyCase.HEARTBEAT_ACK);
  }
}
