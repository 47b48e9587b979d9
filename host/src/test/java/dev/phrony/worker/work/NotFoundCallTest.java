package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkInvoke;
import dev.phrony.runtime.v1.WorkRegistered;
import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.worker.Await;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.outbox.MemoryOutbox;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * Rule 9: a stream that still ends with NOT_FOUND for a call id (a race the worker cannot
 * always avoid, e.g. a cancel crossing our result) marks that call orphaned; the worker
 * reconnects and never sends or advertises it again. The server here is a real gRPC server
 * that forgets the call on purpose.
 */
class NotFoundCallTest {

  /** Invokes {@code c-lost} on the first stream and rejects its result as the runtime would. */
  private static final class ForgetfulRuntime extends RuntimeGrpc.RuntimeImplBase {
    final List<WorkClientMsg> registers = new CopyOnWriteArrayList<>();
    final List<WorkClientMsg> results = new CopyOnWriteArrayList<>();

    @Override
    public StreamObserver<WorkClientMsg> work(StreamObserver<WorkServerMsg> out) {
      boolean first = registers.isEmpty();
      return new StreamObserver<>() {
        @Override
        public void onNext(WorkClientMsg m) {
          if (m.hasRegister()) {
            registers.add(m);
            out.onNext(WorkServerMsg.newBuilder().setRegistered(WorkRegistered.newBuilder()
                .setWorkerId(m.getRegister().getWorkerId()).setLeaseTtlMs(30_000)).build());
            if (first) {
              out.onNext(WorkServerMsg.newBuilder().setInvoke(WorkInvoke.newBuilder()
                  .setCallId("c-lost").setTool("t").setVersion("1.0.0")
                  .setArgs(ByteString.copyFromUtf8("{}"))).build());
            }
          } else if (m.hasResult()) {
            results.add(m);
            out.onError(Status.NOT_FOUND
                .withDescription("unknown call_id \"c-lost\"").asRuntimeException());
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

  @Test
  void a_not_found_call_is_orphaned_and_never_sent_again() throws Exception {
    ForgetfulRuntime service = new ForgetfulRuntime();
    Server server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
        .addService(service).build().start();
    MemoryOutbox outbox = new MemoryOutbox();
    TestHandler handler = TestHandler.of("t", 1, call -> ToolResult.json("{\"paid\":true}"));
    WorkOptions options = WorkOptions.defaults("127.0.0.1:" + server.getPort(),
            new WorkerIdentity("w1", "", ""))
        .withBackoff(Duration.ofMillis(10), Duration.ofMillis(50));
    try (WorkClient client = new WorkClient(options, TestHandler.catalog(handler), outbox,
        InstantSource.system(), bound -> 0)) {
      client.start();
      Await.until("second register", () -> service.registers.size() >= 2);
      assertThat(outbox.isOrphaned("c-lost")).isTrue();
      assertThat(service.registers.get(1).getRegister().getInFlightList()).isEmpty();
      Await.until("registered again", client::registered);
      assertThat(service.results).hasSize(1);
      assertThat(outbox.find("c-lost")).isPresent(); // kept for an operator
    } finally {
      server.shutdownNow();
    }
  }
}
