package dev.phrony.worker.bench;

import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkInvoke;
import dev.phrony.runtime.v1.WorkRegister;
import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.runtime.v1.WorkToolResult;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.util.concurrent.CountDownLatch;

/**
 * The worker side of the ceiling, run as a child JVM: a bare grpc-java client that answers every
 * {@code invoke} with a {@code result} carrying its args, and nothing else. Same flow control as
 * the host: inbound requested in batches (256 up front, 128 more per 128 read), outbound through a
 * single writer that honours {@code isReady}/{@code onReady}.
 */
public final class CeilingClient {
  static final int INBOUND_BATCH = 256;

  private CeilingClient() {}

  public static void main(String[] args) throws InterruptedException {
    ManagedChannel channel = NettyChannelBuilder.forTarget(args[0]).usePlaintext().build();
    CountDownLatch done = new CountDownLatch(1);
    Echoer echoer = new Echoer(done);
    RuntimeGrpc.newStub(channel).work(echoer);
    echoer.writer.send(WorkClientMsg.newBuilder()
        .setRegister(WorkRegister.newBuilder().setWorkerId("ceiling")).build());
    done.await();
    channel.shutdownNow();
  }

  private static final class Echoer
      implements ClientResponseObserver<WorkClientMsg, WorkServerMsg> {
    private final CountDownLatch done;
    private ClientCallStreamObserver<WorkClientMsg> requests;
    private volatile Writer<WorkClientMsg> writer;
    private int received;

    Echoer(CountDownLatch done) {
      this.done = done;
    }

    @Override
    public void beforeStart(ClientCallStreamObserver<WorkClientMsg> requestStream) {
      requests = requestStream;
      writer = new Writer<>(requestStream);
      requestStream.disableAutoRequestWithInitial(INBOUND_BATCH);
      requestStream.setOnReadyHandler(writer::drain);
    }

    @Override
    public void onNext(WorkServerMsg msg) {
      if (msg.hasInvoke()) {
        WorkInvoke inv = msg.getInvoke();
        writer.send(WorkClientMsg.newBuilder().setResult(WorkToolResult.newBuilder()
            .setCallId(inv.getCallId()).setPayload(inv.getArgs())).build());
      }
      if (++received >= INBOUND_BATCH / 2) {
        received = 0;
        requests.request(INBOUND_BATCH / 2);
      }
    }

    @Override
    public void onError(Throwable t) {
      done.countDown();
    }

    @Override
    public void onCompleted() {
      requests.onCompleted();
      done.countDown();
    }
  }
}
