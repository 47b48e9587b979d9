package dev.phrony.worker.bench;

import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkInvoke;
import dev.phrony.runtime.v1.WorkServerMsg;
import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The runtime side of the ceiling: a bare grpc-java server on loopback that pushes {@code invoke}s
 * shaped like the LocalRuntime's and counts the {@code result}s a {@link CeilingClient} (a child
 * JVM) sends back. Nothing else happens per message, so the rate is what this JDK, gRPC and machine
 * allow for the host's message shapes and process layout.
 *
 * <p>A run keeps {@code window} invokes outstanding: 1 is ping-pong, more is pipelined. Results
 * come back in order on one stream, so latency is measured against a ring of send times.
 */
final class Ceiling implements AutoCloseable {
  /** One run; CPU per round trip of the client process and of this JVM (the server side). */
  record Run(
      double perSecond,
      long calls,
      double p50Ms,
      double p99Ms,
      double clientCpuUs,
      double serverCpuUs) {}

  private final Server server;
  private final CompletableFuture<Session> connected = new CompletableFuture<>();
  private final ByteString args;
  private Process client;

  /**
   * Starts the server and its {@link CeilingClient} in a child JVM (output to {@code clientLog})
   * and waits until the client's stream is open.
   */
  static Ceiling start(byte[] args, Path clientLog, Duration timeout) throws Exception {
    Ceiling c = new Ceiling(args);
    try {
      Path java = Path.of(System.getProperty("java.home"), "bin", "java");
      c.client =
          new ProcessBuilder(
                  java.toString(),
                  "--enable-native-access=ALL-UNNAMED",
                  "-cp",
                  System.getProperty("java.class.path"),
                  CeilingClient.class.getName(),
                  c.target())
              .redirectErrorStream(true)
              .redirectOutput(clientLog.toFile())
              .start();
      c.connected.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      return c;
    } catch (Exception e) {
      c.close();
      throw e;
    }
  }

  private Ceiling(byte[] args) throws IOException {
    this.args = ByteString.copyFrom(args);
    this.server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(
                new RuntimeGrpc.RuntimeImplBase() {
                  @Override
                  public StreamObserver<WorkClientMsg> work(StreamObserver<WorkServerMsg> out) {
                    return new Session((ServerCallStreamObserver<WorkServerMsg>) out);
                  }
                })
            .build()
            .start();
  }

  private String target() {
    return "127.0.0.1:" + server.getPort();
  }

  /**
   * Keeps {@code window} invokes outstanding for {@code warmup}, then counts for {@code measure}.
   */
  Run run(int window, Duration warmup, Duration measure) throws Exception {
    long clientPid = client.pid();
    Session s = connected.get();
    Phase phase = new Phase(s, window, warmup, measure);
    s.phase = phase;
    phase.start();
    long self = ProcessHandle.current().pid();
    LockSupport.parkNanos(Math.max(0, phase.from - System.nanoTime()));
    long c0 = Proc.cpuNanos(clientPid);
    long s0 = Proc.cpuNanos(self);
    LockSupport.parkNanos(Math.max(0, phase.until - System.nanoTime()));
    long c1 = Proc.cpuNanos(clientPid);
    long s1 = Proc.cpuNanos(self);
    phase.done.get(measure.plus(warmup).toMillis() + 60_000, TimeUnit.MILLISECONDS);
    double[] p = Latencies.percentilesMs(List.of(phase.latencies), 50, 99);
    long n = phase.counted;
    return new Run(
        n / (measure.toNanos() / 1e9),
        n,
        p[0],
        p[1],
        c0 < 0 ? Double.NaN : (c1 - c0) / 1e3 / n,
        s0 < 0 ? Double.NaN : (s1 - s0) / 1e3 / n);
  }

  /** Ends the stream; the client then exits. */
  @Override
  public void close() throws InterruptedException {
    connected.thenAccept(s -> s.call.onCompleted());
    server.shutdown();
    if (!server.awaitTermination(5, TimeUnit.SECONDS)) {
      server.shutdownNow();
    }
    if (client != null && !client.waitFor(10, TimeUnit.SECONDS)) {
      client.destroyForcibly();
    }
  }

  private final class Session implements StreamObserver<WorkClientMsg> {
    final ServerCallStreamObserver<WorkServerMsg> call;
    final Writer<WorkServerMsg> writer;
    volatile Phase phase;
    private int received;

    Session(ServerCallStreamObserver<WorkServerMsg> call) {
      this.call = call;
      this.writer = new Writer<>(call);
      call.disableAutoRequest();
      call.setOnReadyHandler(writer::drain);
      call.request(WorkerStream.INBOUND_BATCH);
    }

    @Override
    public void onNext(WorkClientMsg msg) {
      if (msg.hasRegister()) {
        connected.complete(this);
      } else if (msg.hasResult()) {
        phase.onResult();
      }
      if (++received >= WorkerStream.INBOUND_BATCH / 2) {
        received = 0;
        call.request(WorkerStream.INBOUND_BATCH / 2);
      }
    }

    @Override
    public void onError(Throwable t) {
      connected.completeExceptionally(t);
      Phase p = phase;
      if (p != null) {
        p.done.completeExceptionally(t);
      }
    }

    @Override
    public void onCompleted() {
      call.onCompleted();
    }
  }

  /** One measured run; its state is touched by the stream's (serialized) inbound callbacks. */
  private final class Phase {
    final Session session;
    final int window;
    final long[] sentAt;
    final int mask;
    final long warmupNanos;
    final long measureNanos;
    final Latencies latencies = new Latencies();
    final CompletableFuture<Void> done = new CompletableFuture<>();
    volatile long from;
    volatile long until;
    long sent;
    long answered;
    long counted;
    boolean stopping;

    Phase(Session session, int window, Duration warmup, Duration measure) {
      this.session = session;
      this.window = window;
      this.sentAt = new long[Integer.highestOneBit(Math.max(1, window - 1)) << 1];
      this.mask = sentAt.length - 1;
      this.warmupNanos = warmup.toNanos();
      this.measureNanos = measure.toNanos();
    }

    synchronized void start() {
      long now = System.nanoTime();
      from = now + warmupNanos;
      until = from + measureNanos;
      for (int i = 0; i < window; i++) {
        sendNext();
      }
    }

    private void sendNext() {
      long seq = sent++;
      sentAt[(int) (seq & mask)] = System.nanoTime();
      session.writer.send(
          WorkServerMsg.newBuilder()
              .setInvoke(
                  WorkInvoke.newBuilder()
                      .setCallId("s-ceiling:av-bench:1:" + seq)
                      .setSessionId("s-ceiling")
                      .setAgentVersionId("av-bench")
                      .setTurn(1)
                      .setTool("echo")
                      .setVersion("default")
                      .setArgs(args)
                      .setSideEffectClass("")
                      .setDeadlineUnixMs(0))
              .build());
    }

    synchronized void onResult() {
      long now = System.nanoTime();
      long seq = answered++;
      if (now >= from && now < until) {
        counted++;
        latencies.add(now - sentAt[(int) (seq & mask)]);
      }
      if (now >= until) {
        stopping = true;
      }
      if (!stopping) {
        sendNext();
      } else if (answered == sent) {
        done.complete(null);
      }
    }
  }
}
