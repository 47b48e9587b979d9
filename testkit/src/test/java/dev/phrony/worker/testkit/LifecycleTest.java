package dev.phrony.worker.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.runtime.v1.GetVersionRequest;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.runtime.v1.WorkServerMsg.BodyCase;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class LifecycleTest extends RuntimeTestSupport {

  @Test
  void restartIsAGracefulStopThenAStartOnTheSamePortWithTheLedgerKept() {
    start(b -> b.shutdownGrace(Duration.ofMillis(200)));
    int port = runtime.port();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 2);
    runtime.dispatch(Call.of("done", "s", "echo", "1", "{}"));
    w.expectInvoke();
    w.result("done", "{\"kept\":1}").expect(BodyCase.RESULT_ACK);
    CompletableFuture<Outcome> running =
        runtime.dispatch(Call.of("running", "s", "echo", "1", "{}"));
    w.expectInvoke();

    runtime.restart();

    assertThat(await(running))
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> assertThat(e.kind()).isEqualTo(Outcome.Kind.INDETERMINATE));
    assertThat(w.awaitEnd().isOk()).isFalse(); // cut after the grace period
    assertThat(w.received()).extracting(WorkServerMsg::getBodyCase).doesNotContain(BodyCase.CANCEL);
    assertThat(runtime.isRunning()).isTrue();
    assertThat(runtime.port()).isEqualTo(port);
    assertThat(runtime.workers()).isEmpty();

    ScriptedWorker back = ScriptedWorker.open(channelTo(runtime));
    back.register("w1", List.of(ScriptedWorker.handler("echo", "1", 2)), "done", "running");
    assertThat(back.expect(BodyCase.RESULT_ACK).getResultAck().getCallId()).isEqualTo("done");
    back.expect(BodyCase.REGISTERED);
    assertThat(runtime.completed("done").orElseThrow().text()).isEqualTo("{\"kept\":1}");
    back.close();
  }

  @Test
  void duringTheGracePeriodOpenStreamsTalkToAnEmptiedRegistry() {
    start(b -> b.shutdownGrace(Duration.ofSeconds(30)));
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);

    CompletableFuture<Void> stopping = CompletableFuture.runAsync(runtime::stop);
    Await.until("workers dropped", () -> runtime.workers().isEmpty());
    Outcome refused = await(runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}")));

    Status status = w.heartbeat().awaitEnd();
    assertThat(status.getCode()).isEqualTo(Status.Code.NOT_FOUND);
    assertThat(status.getDescription()).isEqualTo("unknown worker \"w1\"");
    await(stopping); // the last stream ended, so the stop did not need the grace period
    assertThat(refused)
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> {
              assertThat(e.kind()).isEqualTo(Outcome.Kind.SHUTDOWN);
              assertThat(e.message()).isEqualTo("context canceled");
            });
    assertThat(runtime.isRunning()).isFalse();
  }

  @Test
  void waitingCallsEndShutdownWhenTheRuntimeStops() {
    start();
    CompletableFuture<Outcome> waiting = runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}"));

    runtime.stop();

    assertThat(await(waiting))
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> assertThat(e.kind()).isEqualTo(Outcome.Kind.SHUTDOWN));
  }

  @Test
  void crashCutsEveryStreamAndStartBringsTheRuntimeBackOnTheSamePortWithItsLedger() {
    start();
    int port = runtime.port();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 2);
    runtime.dispatch(Call.of("done", "s", "echo", "1", "{}"));
    w.expectInvoke();
    w.result("done", "{}").expect(BodyCase.RESULT_ACK);
    CompletableFuture<Outcome> running =
        runtime.dispatch(Call.of("running", "s", "echo", "1", "{}"));
    w.expectInvoke();

    runtime.crash();

    assertThat(w.awaitEnd().isOk()).isFalse();
    assertThat(await(running))
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> assertThat(e.kind()).isEqualTo(Outcome.Kind.INDETERMINATE));
    assertThat(runtime.isRunning()).isFalse();
    assertThat(await(runtime.dispatch(Call.of("meanwhile", "s", "echo", "1", "{}"))))
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> assertThat(e.kind()).isEqualTo(Outcome.Kind.SHUTDOWN));

    runtime.start();

    assertThat(runtime.port()).isEqualTo(port);
    ScriptedWorker back = ScriptedWorker.open(channelTo(runtime));
    back.register("w1", List.of(ScriptedWorker.handler("echo", "1", 2)), "done");
    assertThat(back.expect(BodyCase.RESULT_ACK).getResultAck().getCallId()).isEqualTo("done");
    back.expect(BodyCase.REGISTERED);
    back.close();
  }

  @Test
  void startTwiceOrAfterCloseIsRefusedAndCloseIsIdempotent() {
    start();
    assertThatThrownBy(runtime::start).isInstanceOf(IllegalStateException.class);

    runtime.close();
    runtime.close();

    assertThat(runtime.isRunning()).isFalse();
    assertThatThrownBy(runtime::start).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void getVersionAndHealthAreServed() {
    start(b -> b.version("0.2.7", "42"));

    var version =
        RuntimeGrpc.newBlockingStub(channel).getVersion(GetVersionRequest.getDefaultInstance());
    var health = HealthGrpc.newBlockingStub(channel);

    assertThat(version.getVersion()).isEqualTo("0.2.7");
    assertThat(version.getSchemaVersion()).isEqualTo("42");
    assertThat(health.check(HealthCheckRequest.newBuilder().setService("").build()).getStatus())
        .isEqualTo(ServingStatus.SERVING);
    assertThat(
            health
                .check(
                    HealthCheckRequest.newBuilder().setService("phrony.runtime.v1.Runtime").build())
                .getStatus())
        .isEqualTo(ServingStatus.SERVING);
    assertThat(
            health.check(HealthCheckRequest.newBuilder().setService("other").build()).getStatus())
        .isEqualTo(ServingStatus.SERVICE_UNKNOWN);
  }

  @Test
  void aResultOverFourMebibytesBreaksTheStreamWhileOneJustUnderIsAccepted() {
    start();
    ScriptedWorker w = worker().registered("w1", "big", "1", 2);
    CompletableFuture<Outcome> fits = runtime.dispatch(Call.of("fits", "s", "big", "1", "{}"));
    CompletableFuture<Outcome> tooBig = runtime.dispatch(Call.of("too-big", "s", "big", "1", "{}"));
    w.expectInvoke();
    w.expectInvoke();

    w.result("fits", new byte[4 * 1024 * 1024 - 64]).expect(BodyCase.RESULT_ACK);
    assertThat(await(fits)).isInstanceOf(Outcome.Result.class);

    Status status = w.result("too-big", new byte[4 * 1024 * 1024 + 1]).awaitEnd();
    assertThat(status.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(status.getDescription())
        .matches("grpc: received message larger than max \\(\\d+ vs\\. 4194304\\)");
    assertThat(await(tooBig))
        .isInstanceOfSatisfying(
            Outcome.DispatchError.class,
            e -> assertThat(e.kind()).isEqualTo(Outcome.Kind.INDETERMINATE));
    assertThat(runtime.workers()).isEmpty();
  }

  @Test
  void outboundMessagesHaveNoSizeLimit() {
    start();
    ScriptedWorker w = worker().registered("w1", "big", "1", 1);
    String hugeArgs = "{\"blob\":\"" + "x".repeat(5 * 1024 * 1024) + "\"}";

    runtime.dispatch(Call.of("c1", "s", "big", "1", hugeArgs));

    assertThat(w.expectInvoke().getArgs().size()).isEqualTo(hugeArgs.length());
  }

  @Test
  void aStoppedRuntimeCanBeStartedAgainOnItsPort() {
    start();
    int port = runtime.port();
    runtime.stop();
    runtime.stop(); // no-op

    runtime.start();

    assertThat(runtime.port()).isEqualTo(port);
    ManagedChannel fresh = channelTo(runtime);
    assertThat(
            HealthGrpc.newBlockingStub(fresh)
                .check(HealthCheckRequest.getDefaultInstance())
                .getStatus())
        .isEqualTo(ServingStatus.SERVING);
  }

  @Test
  void listensOnAGivenLoopbackPort() throws Exception {
    int free;
    try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
      free = probe.getLocalPort();
    }

    start(b -> b.port(free));

    assertThat(runtime.port()).isEqualTo(free);
    assertThat(runtime.target()).isEqualTo("127.0.0.1:" + free);
    worker().registered("w1", "echo", "1", 1);
  }

  @Test
  void aPortInUseFailsTheFirstStartAtOnceWithABindException() throws Exception {
    try (java.net.ServerSocket taken =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
      LocalRuntime rt = LocalRuntime.builder().port(taken.getLocalPort()).build();

      assertThatThrownBy(rt::start)
          .isInstanceOf(java.io.UncheckedIOException.class)
          .hasMessageContaining(String.valueOf(taken.getLocalPort()))
          .hasRootCauseInstanceOf(java.net.BindException.class);
      // No waiting for the port to come free: that is only for a restart on the runtime's own port.
      assertThat(rt.bindAttempts()).isOne();
      rt.close();
    }
  }
}
