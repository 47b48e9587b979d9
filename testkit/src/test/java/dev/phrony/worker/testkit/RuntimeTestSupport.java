package dev.phrony.worker.testkit;

import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;

/** Starts runtimes, channels and scripted workers for a test and closes them afterwards. */
abstract class RuntimeTestSupport {

  static final Duration TIMEOUT = ScriptedWorker.TIMEOUT;

  private final Deque<AutoCloseable> cleanup = new ArrayDeque<>();
  LocalRuntime runtime;
  ManagedChannel channel;

  /**
   * Starts {@link #runtime} with test-friendly settings changed by {@code config}, and a channel to
   * it.
   */
  LocalRuntime start(UnaryOperator<LocalRuntime.Builder> config) {
    runtime = config.apply(LocalRuntime.builder().shutdownGrace(Duration.ofMillis(300))).start();
    cleanup.push(runtime);
    channel = channelTo(runtime);
    return runtime;
  }

  LocalRuntime start() {
    return start(b -> b);
  }

  ManagedChannel channelTo(LocalRuntime rt) {
    ManagedChannel ch =
        NettyChannelBuilder.forTarget(rt.target())
            .usePlaintext()
            .maxInboundMessageSize(64 * 1024 * 1024)
            .build();
    cleanup.push(
        () -> {
          ch.shutdownNow();
          ch.awaitTermination(5, TimeUnit.SECONDS);
        });
    return ch;
  }

  ScriptedWorker worker() {
    ScriptedWorker w = ScriptedWorker.open(channel);
    cleanup.push(w);
    return w;
  }

  @AfterEach
  void closeAll() throws Exception {
    while (!cleanup.isEmpty()) {
      cleanup.pop().close();
    }
  }

  static <T> T await(CompletableFuture<T> future) {
    try {
      return future.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      throw new AssertionError("future did not complete within " + TIMEOUT, e);
    }
  }
}
