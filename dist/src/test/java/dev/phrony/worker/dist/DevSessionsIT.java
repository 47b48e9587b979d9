package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.AgentRef;
import dev.phrony.runtime.v1.ApprovalDecision;
import dev.phrony.runtime.v1.DecideApprovalRequest;
import dev.phrony.runtime.v1.RunSessionInteractiveClientMsg;
import dev.phrony.runtime.v1.RunSessionInteractiveServerMsg;
import dev.phrony.runtime.v1.RunSessionInteractiveServerMsg.BodyCase;
import dev.phrony.runtime.v1.RunSessionInteractiveStart;
import dev.phrony.runtime.v1.RuntimeGrpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bin/phrony-worker dev --agent samples/payment-scenario} as a child process with the
 * bundled plugins, driven over the runtime's session API by a gRPC client built from the runtime's
 * proto: the scripted model's three payments reach the real payments plugin, wait for a human, or
 * are denied by policy, in the runtime's order.
 */
class DevSessionsIT {
  @TempDir Path tmp;

  @Test
  void the_sample_scenario_runs_against_the_bundled_payments_plugin() throws Exception {
    int port = DistProcess.freePort();
    Path scenario =
        Path.of(System.getProperty("phrony.repo.dir"))
            .resolve("samples/payment-scenario")
            .toAbsolutePath()
            .normalize();
    try (DistProcess dev =
        DistProcess.start(
            tmp,
            Map.of(),
            "dev",
            "--port",
            String.valueOf(port),
            "--control-port",
            "0",
            "--agent",
            scenario.toString())) {
      dev.awaitStdout("Ctrl-C stops.", DistProcess.DEADLINE);
      assertThat(dev.stdout())
          .contains("agent    demo/payment-agent@1.0.0")
          .contains("(2 scripted turns, 2 policies)");

      ManagedChannel channel =
          NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
      try {
        LinkedBlockingQueue<RunSessionInteractiveServerMsg> events = new LinkedBlockingQueue<>();
        CompletableFuture<Void> ended = new CompletableFuture<>();
        StreamObserver<RunSessionInteractiveClientMsg> stream =
            RuntimeGrpc.newStub(channel)
                .runSessionInteractive(
                    new StreamObserver<>() {
                      @Override
                      public void onNext(RunSessionInteractiveServerMsg m) {
                        events.add(m);
                      }

                      @Override
                      public void onError(Throwable t) {
                        ended.completeExceptionally(t);
                      }

                      @Override
                      public void onCompleted() {
                        ended.complete(null);
                      }
                    });
        stream.onNext(
            RunSessionInteractiveClientMsg.newBuilder()
                .setStart(
                    RunSessionInteractiveStart.newBuilder()
                        .setAgentRef(
                            AgentRef.newBuilder().setNamespace("demo").setName("payment-agent"))
                        .setInput(ByteString.copyFromUtf8("{\"message\":\"Pay the invoices\"}")))
                .build());

        List<RunSessionInteractiveServerMsg> seen = new ArrayList<>();
        RunSessionInteractiveServerMsg held = null;
        // Until the held payment shows: the others go on concurrently, in either order.
        while (held == null) {
          RunSessionInteractiveServerMsg m = events.poll(60, TimeUnit.SECONDS);
          assertThat(m).as("events so far: %s", seen).isNotNull();
          seen.add(m);
          if (m.getBodyCase() == BodyCase.APPROVAL_REQUIRED) {
            held = m;
          }
        }
        RuntimeGrpc.newBlockingStub(channel)
            .decideApproval(
                DecideApprovalRequest.newBuilder()
                    .setApprovalId(held.getApprovalRequired().getApprovalId())
                    .setDecision(ApprovalDecision.APPROVAL_DECISION_APPROVE)
                    .setActor("it")
                    .build());
        while (seen.getLast().getBodyCase() != BodyCase.AWAITING_INPUT) {
          RunSessionInteractiveServerMsg m = events.poll(60, TimeUnit.SECONDS);
          assertThat(m).as("events so far: %s", seen).isNotNull();
          seen.add(m);
        }
        stream.onCompleted();
        RunSessionInteractiveServerMsg last = events.poll(60, TimeUnit.SECONDS);
        assertThat(last).isNotNull();
        assertThat(last.getBodyCase()).isEqualTo(BodyCase.COMPLETED);
        ended.get(60, TimeUnit.SECONDS);

        assertThat(seen.getFirst().getBodyCase()).isEqualTo(BodyCase.SESSION_STARTED);
        assertThat(seen.get(1).getTextDelta().getDelta()).isEqualTo("Paying the invoices. ");
        List<String> results =
            seen.stream()
                .filter(m -> m.getBodyCase() == BodyCase.TOOL_RESULT)
                .map(
                    m ->
                        m.getToolResult().getErrorMessage()
                            + m.getToolResult().getPayload().toStringUtf8())
                .toList();
        assertThat(results)
            .hasSize(3)
            .anyMatch(r -> r.contains("\"payee\":\"Acme Corp\"") && r.contains("succeeded"))
            .anyMatch(r -> r.contains("\"payee\":\"Globex\"") && r.contains("succeeded"))
            .contains("Payment amount exceeds 10000.");
        assertThat(seen.stream().filter(m -> m.getBodyCase() == BodyCase.TOOL_CALL).count())
            .as("the denied call is never announced nor dispatched")
            .isEqualTo(2);
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
      // dev's console shows the calls that reached the worker
      dev.awaitStdout("tool_result", DistProcess.DEADLINE);
    }
  }
}
