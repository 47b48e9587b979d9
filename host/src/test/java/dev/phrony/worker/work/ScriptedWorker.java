package dev.phrony.worker.work;

import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkRegister;
import dev.phrony.runtime.v1.WorkServerMsg;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** A raw Work client whose every message the test chooses: for provoking the runtime. */
final class ScriptedWorker implements AutoCloseable {
  private final ManagedChannel channel;
  private final StreamObserver<WorkClientMsg> out;
  final LinkedBlockingQueue<WorkServerMsg> received = new LinkedBlockingQueue<>();

  private ScriptedWorker(String target) {
    channel = NettyChannelBuilder.forTarget(target).usePlaintext().build();
    out = RuntimeGrpc.newStub(channel).work(new StreamObserver<>() {
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

  static ScriptedWorker connect(String target) {
    return new ScriptedWorker(target);
  }

  void register(String workerId) {
    out.onNext(WorkClientMsg.newBuilder()
        .setRegister(WorkRegister.newBuilder().setWorkerId(workerId)).build());
  }

  void awaitRegistered(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      WorkServerMsg m = received.poll(100, TimeUnit.MILLISECONDS);
      if (m != null && m.hasRegistered()) {
        return;
      }
    }
    throw new AssertionError("no registered within " + timeout);
  }

  /** Ends the stream cleanly (the runtime then removes the registration). */
  @Override
  public void close() throws InterruptedException {
    out.onCompleted();
    channel.shutdown().awaitTermination(5, TimeUnit.SECONDS);
  }
}
