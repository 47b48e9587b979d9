package dev.phrony.worker.work;

import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkRegister;
import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.worker.testkit.Await;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** A raw Work client whose every message the test chooses: for provoking the runtime. */
final class RawWorkClient implements AutoCloseable {
  private final ManagedChannel channel;
  private final StreamObserver<WorkClientMsg> out;
  final LinkedBlockingQueue<WorkServerMsg> received = new LinkedBlockingQueue<>();

  private RawWorkClient(String target) {
    channel = NettyChannelBuilder.forTarget(target).usePlaintext().build();
    out =
        RuntimeGrpc.newStub(channel)
            .work(
                new StreamObserver<>() {
                  @Override
                  public void onNext(WorkServerMsg m) {
                    received.add(m);
                  }

                  @Override
                  public void onError(Throwable t) {}

                  @Override
                  public void onCompleted() {}
                });
  }

  static RawWorkClient connect(String target) {
    return new RawWorkClient(target);
  }

  void register(String workerId) {
    out.onNext(
        WorkClientMsg.newBuilder()
            .setRegister(WorkRegister.newBuilder().setWorkerId(workerId))
            .build());
  }

  void awaitRegistered(Duration timeout) {
    Await.until(
        "registered",
        () -> {
          WorkServerMsg m = received.poll();
          return m != null && m.hasRegistered();
        },
        timeout);
  }

  /** Ends the stream cleanly (the runtime then removes the registration). */
  @Override
  public void close() throws InterruptedException {
    out.onCompleted();
    channel.shutdown().awaitTermination(5, TimeUnit.SECONDS);
  }
}
