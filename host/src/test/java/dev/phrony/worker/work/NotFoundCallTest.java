package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkInvoke;
import dev.phrony.runtime.v1.WorkRegistered;
import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.testkit.Await;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * Rule 9: a stream that still ends with NOT_FOUND for a call id (a race the worker cannot always
 * avoid, e.g. a cancel crossing our result) marks that call orphaned; the worker reconnects and
 * never sends or advertises it again. The server here is a real gRPC server that forgets the call
 * on purpose.
 */
class NotFoundCallTest {

  /**
   * On the first stream, invokes {@code callIds} one after the other (the next once the result of
   * the one before arrives), and rejects the result of {@code rejected} as the runtime rejects a
   * result for a call it does not know.
   */
  private static final class ForgetfulRuntime extends RuntimeGrpc.RuntimeImplBase {
    final List<WorkClientMsg> registers = new CopyOnWriteArrayList<>();
    final List<WorkClientMsg> results = new CopyOnWriteArrayList<>();
    private final String rejected;
    private final List<String> callIds;

    ForgetfulRuntime(String rejected, String... callIds) {
      this.rejected = rejected;
      this.callIds = List.of(callIds);
    }

    private static WorkServerMsg invoke(String callId) {
      return WorkServerMsg.newBuilder()
          .setInvoke(
              WorkInvoke.newBuilder()
                  .setCallId(callId)
                  .setTool("t")
                  .setVersion("1.0.0")
                  .setArgs(ByteString.copyFromUtf8("{}")))
          .build();
    }

    @Override
    public StreamObserver<WorkClientMsg> work(StreamObserver<WorkServerMsg> out) {
      boolean first = registers.isEmpty();
      return new StreamObserver<>() {
        @Override
        public void onNext(WorkClientMsg m) {
          if (m.hasRegister()) {
            registers.add(m);
            out.onNext(
                WorkServerMsg.newBuilder()
                    .setRegistered(
                        WorkRegistered.newBuilder()
                            .setWorkerId(m.getRegister().getWorkerId())
                            .setLeaseTtlMs(30_000))
                    .build());
            if (first) {
              out.onNext(invoke(callIds.getFirst()));
            }
          } else if (m.hasResult()) {
            results.add(m);
            String id = m.getResult().getCallId();
            if (id.equals(rejected)) {
              out.onError(
                  Status.NOT_FOUND
                      .withDescription("unknown call_id \"" + id + "\"")
                      .asRuntimeException());
            } else if (callIds.indexOf(id) + 1 < callIds.size()) {
              out.onNext(invoke(callIds.get(callIds.indexOf(id) + 1)));
            }
          }
        }

        @Override
        public void onError(Throwable t) {}

        @Override
        public void onCompleted() {
          out.onCompleted();
        }
      };
    }
  }

  /** What a test does with a worker serving handler {@code t} against {@code service}. */
  private interface Scenario {
    void run(WorkClient client, MemoryOutbox outbox) throws Exception;
  }

  private static void against(
      RuntimeGrpc.RuntimeImplBase service, String payload, Scenario scenario) throws Exception {
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(service)
            .build()
            .start();
    MemoryOutbox outbox = new MemoryOutbox();
    TestHandler handler = TestHandler.of("t", 2, call -> ToolResult.json(payload));
    WorkOptions options =
        WorkOptions.defaults("127.0.0.1:" + server.getPort(), new WorkerIdentity("w1", "", ""))
            .withBackoff(Duration.ofMillis(10), Duration.ofMillis(50));
    try (WorkClient client =
        new WorkClient(options, TestHandler.catalog(handler), outbox, null, bound -> 0)) {
      client.start();
      scenario.run(client, outbox);
    } finally {
      server.shutdownNow();
    }
  }

  @Test
  void only_the_call_id_named_by_not_found_is_orphaned_not_ids_it_contains() throws Exception {
    // s:av:1:1 is answered (and its result kept, no ack), then s:av:1:12 is rejected.
    ForgetfulRuntime service = new ForgetfulRuntime("s:av:1:12", "s:av:1:1", "s:av:1:12");
    against(
        service,
        "{}",
        (client, outbox) -> {
          Await.until("second register", () -> service.registers.size() >= 2);
          // The replacement registers from the callback that reads the kill; the end, which
          // orphans the unknown call, is taken in after the stream's earlier messages.
          Await.until("the unknown call orphaned", () -> outbox.isOrphaned("s:av:1:12"));
          assertThat(outbox.isOrphaned("s:av:1:1")).as("a prefix of the unknown id").isFalse();
          assertThat(service.registers.get(1).getRegister().getInFlightList())
              .extracting(c -> c.getCallId())
              .containsExactly("s:av:1:1");
        });
  }

  @Test
  void a_not_found_call_is_orphaned_and_never_sent_again() throws Exception {
    ForgetfulRuntime service = new ForgetfulRuntime("c-lost", "c-lost");
    against(
        service,
        "{\"paid\":true}",
        (client, outbox) -> {
          Await.until("second register", () -> service.registers.size() >= 2);
          Await.until("the unknown call orphaned", () -> outbox.isOrphaned("c-lost"));
          assertThat(service.registers.get(1).getRegister().getInFlightList()).isEmpty();
          Await.until("registered again", client::registered);
          assertThat(service.results).hasSize(1);
          assertThat(outbox.find("c-lost")).isPresent(); // kept for an operator
        });
  }
}
