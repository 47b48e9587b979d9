package dev.phrony.worker.bench;

import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkInvoke;
import dev.phrony.runtime.v1.WorkRegister;
import dev.phrony.runtime.v1.WorkToolResult;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.util.concurrent.CountDownLatch;

/**
 * The worker side of the ceiling, run as a child JVM: a bare grpc-java client that answers every
 * {@code invoke} with a {@code result} carrying its args, and nothing else. Same flow control as
 * the host ({@link WorkerStream}).
 */
public final class CeilingClient {
  private CeilingClient() {}

  public static void main(String[] args) throws InterruptedException {
    ManagedChannel channel = NettyChannelBuilder.forTarget(args[0]).usePlaintext().build();
    CountDownLatch done = new CountDownLatch(1);
    Echoer echoer = new Echoer(done);
    RuntimeGrpc.newStub(channel).work(echoer);
    echoer.send(
        WorkClientMsg.newBuilder()
            .setRegister(WorkRegister.newBuilder().setWorkerId("ceiling"))
            .build());
    done.await();
    channel.shutdownNow();
  }

  /** Each invoke's args back as its result, and nothing else. */
  private static final class Echoer extends WorkerStream {
    Echoer(CountDownLatch done) {
      super(done);
    }

    @Override
    void onInvoke(WorkInvoke inv) {
      send(
          WorkClientMsg.newBuilder()
              .setResult(
                  WorkToolResult.newBuilder().setCallId(inv.getCallId()).setPayload(inv.getArgs()))
              .build());
    }
  }
}
