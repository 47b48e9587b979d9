package dev.phrony.worker.cli;

import static dev.phrony.worker.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.AgentRef;
import dev.phrony.runtime.v1.RunSessionInteractiveClientMsg;
import dev.phrony.runtime.v1.RunSessionInteractiveServerMsg;
import dev.phrony.runtime.v1.RunSessionInteractiveStart;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.worker.agent.DevAgents;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.contract.Fixtures;
import dev.phrony.worker.dev.ApprovalPolicy;
import dev.phrony.worker.dev.DevFixture;
import dev.phrony.worker.dev.DevServer;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code call --session ID --follow --runtime ADDR}: a client of the runtime's {@code
 * RunSessionInteractive}, attached to a session of {@code dev --agent}.
 */
class CallFollowRuntimeTest {

  @Test
  void follow_attaches_to_a_session_and_prints_its_events_until_it_ends() throws Exception {
    DevAgents agents =
        DevAgents.load(
            List.of(Fixtures.dir().resolveSibling("scenarios").resolve("01-auto-dispatch")));
    try (DevServer dev =
        DevServer.start(
            new DevServer.Options(
                0,
                0,
                Optional.of(
                    DevFixture.host(
                        DevFixture.catalog(
                            DevFixture.handler(
                                "payments.process-payment",
                                "1.0.0",
                                call -> ToolResult.json("{\"status\":\"succeeded\"}"))))),
                ApprovalPolicy.NONE,
                agents))) {
      ManagedChannel channel =
          NettyChannelBuilder.forTarget(dev.runtimeTarget()).usePlaintext().build();
      try {
        LinkedBlockingQueue<RunSessionInteractiveServerMsg> events = new LinkedBlockingQueue<>();
        StreamObserver<RunSessionInteractiveClientMsg> starter =
            RuntimeGrpc.newStub(channel)
                .runSessionInteractive(
                    new StreamObserver<>() {
                      @Override
                      public void onNext(RunSessionInteractiveServerMsg m) {
                        events.add(m);
                      }

                      @Override
                      public void onError(Throwable t) {}

                      @Override
                      public void onCompleted() {}
                    });
        starter.onNext(
            RunSessionInteractiveClientMsg.newBuilder()
                .setStart(
                    RunSessionInteractiveStart.newBuilder()
                        .setAgentRef(
                            AgentRef.newBuilder()
                                .setNamespace("demo")
                                .setName("payment-agent-auto"))
                        .setInput(ByteString.copyFromUtf8("{\"message\":\"Pay\"}")))
                .build());
        String session = events.poll(20, TimeUnit.SECONDS).getSessionStarted().getSessionId();
        RunSessionInteractiveServerMsg m;
        do {
          m = events.poll(20, TimeUnit.SECONDS);
        } while (m != null && !m.hasAwaitingInput());

        CompletableFuture<CliRun> follow =
            CompletableFuture.supplyAsync(
                () ->
                    run(
                        "call",
                        "--session",
                        session,
                        "--follow",
                        "--runtime",
                        dev.runtimeTarget()));
        starter.onCompleted(); // the session completes, and the follower's stream ends

        CliRun r = follow.get(30, TimeUnit.SECONDS);
        assertThat(r.exit()).as(r.err()).isZero();
        List<String> lines = r.out().lines().toList();
        assertThat(lines.getFirst())
            .startsWith("{\"session_started\":{\"session_id\":\"" + session + "\"");
        assertThat(lines.getLast()).startsWith("{\"completed\":{\"stop_reason\":\"end_turn\"");
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void follow_of_a_session_the_runtime_does_not_know_is_a_usage_error() {
    try (DevServer dev = DevFixture.startWithoutHost()) {
      CliRun r = run("call", "--session", "nope", "--follow", "--runtime", dev.runtimeTarget());
      assertThat(r.exit()).isEqualTo(1);
      assertThat(r.err()).isEqualTo("phrony-worker call: session nope not found\n");
    }
  }
}
