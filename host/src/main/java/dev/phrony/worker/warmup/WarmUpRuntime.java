package dev.phrony.worker.warmup;

import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkHeartbeatAck;
import dev.phrony.runtime.v1.WorkInvoke;
import dev.phrony.runtime.v1.WorkRegistered;
import dev.phrony.runtime.v1.WorkResultAck;
import dev.phrony.runtime.v1.WorkServerMsg;
import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The runtime a warm-up serves: {@code Runtime.Work} on {@code 127.0.0.1:0}, on one I/O thread of
 * its own (every callback runs there, so its counters need no lock). It answers the register, keeps
 * {@link WarmUpTools#SLOTS} invokes in flight until the budget is spent ({@link #budgetSpent}),
 * then {@link #SETTLE_SLOTS} until {@link #finish}, acks every result and every heartbeat, and ends
 * the worker's stream every {@link #streamCalls} invokes (the worker opens the next at once);
 * {@link #done} completes when it is finished and every invoke sent has been answered. Its own code
 * is JIT-compiled for nothing, so it does as little as a runtime can.
 */
final class WarmUpRuntime implements AutoCloseable {
  /** ~64 bytes of JSON, as a no-op call under load carries. */
  private static final ByteString ARGS =
      ByteString.copyFrom(
          "{\"city\":\"Oslo\",\"days\":3,\"units\":\"metric\",\"lang\":\"en-GB\",\"x\":1}",
          StandardCharsets.UTF_8);

  private static final ByteString TYPED_ARGS =
      ByteString.copyFrom("{\"city\":\"Oslo\",\"days\":3}", StandardCharsets.UTF_8);

  /**
   * Calls in flight once the budget is spent, while the JIT catches up (see {@link WarmUp}): few,
   * so that the compiler threads have the cores, but never none, as a method not run for 50 ms
   * loses its place in the compile queue ({@code TieredCompileTaskTimeout}).
   */
  static final int SETTLE_SLOTS = 1;

  /**
   * Invokes on one stream before it ends and the worker opens the next (see {@link Stream}): an
   * eighth of a call budget, in 500 to 20 000.
   */
  private final long streamCalls;

  private final EventLoopGroup io;
  private final Server server;
  private final long budgetCalls;
  private final long endNanos;
  private final CompletableFuture<Long> done = new CompletableFuture<>();
  private final CompletableFuture<Void> budgetSpent = new CompletableFuture<>();
  private long sent; // on the I/O thread
  private boolean finished; // no invoke sent any more (see #finish)
  private long answered;
  private long failed;
  private int streams;

  private WarmUpRuntime(WarmUpBudget budget, InetSocketAddress address) throws IOException {
    this.budgetCalls = budget.calls() > 0 ? budget.calls() : Long.MAX_VALUE;
    this.streamCalls = Math.clamp(budgetCalls / 8, 500, 20_000);
    this.endNanos = System.nanoTime() + budget.time().toNanos();
    boolean epoll = Epoll.isAvailable();
    this.io =
        new MultiThreadIoEventLoopGroup(
            1,
            new DefaultThreadFactory("phrony-warm-up-runtime", true),
            epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
    Class<? extends ServerChannel> type =
        epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
    try {
      this.server =
          NettyServerBuilder.forAddress(address)
              .channelType(type)
              .bossEventLoopGroup(io)
              .workerEventLoopGroup(io)
              .directExecutor()
              .addService(new Service())
              .build()
              .start();
    } catch (IOException | RuntimeException e) {
      io.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      throw e;
    }
  }

  /** Listening on {@code address} ({@link WarmUp#LOOPBACK}: a loopback port of its own). */
  static WarmUpRuntime start(WarmUpBudget budget, InetSocketAddress address) throws IOException {
    return new WarmUpRuntime(budget, address);
  }

  String target() {
    return "127.0.0.1:" + server.getPort();
  }

  /**
   * Completes once the budget's calls are sent: from then on the worker's stream carries only
   * {@link #SETTLE_SLOTS} calls at a time, until {@link #finish}.
   */
  CompletableFuture<Void> budgetSpent() {
    return budgetSpent;
  }

  /** Sends no more invokes: {@link #done} completes once those sent are answered. */
  void finish() {
    io.execute(
        () -> {
          finished = true;
          if (answered == sent) {
            done.complete(answered);
          }
        });
  }

  /** Completes with the calls answered once {@link #finish}ed and every invoke answered. */
  CompletableFuture<Long> done() {
    return done;
  }

  /** The worker's streams that registered (the worker's stream ends each {@link #streamCalls}). */
  int streams() {
    return streams;
  }

  /** Calls answered with an error or refused (a warm-up's handlers never fail: a bug if not 0). */
  long failed() {
    return failed;
  }

  /** Stops listening and ends its I/O thread, waiting at most {@code wait}. */
  @Override
  public void close() {
    close(Duration.ofSeconds(5));
  }

  void close(Duration wait) {
    server.shutdownNow();
    try {
      server.awaitTermination(wait.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    io.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS).awaitUninterruptibly(wait.toMillis());
  }

  private final class Service extends RuntimeGrpc.RuntimeImplBase {
    @Override
    public StreamObserver<WorkClientMsg> work(StreamObserver<WorkServerMsg> out) {
      return new Stream(out);
    }
  }

  /**
   * One stream of the worker's. It ends, once {@link #streamCalls} of its invokes are answered, and
   * the worker opens the next at once: a worker meets {@code registered}, a new stream's first
   * frames and a stream's end on the real runtime, and met them only at the warm-up's start, before
   * anything was compiled, the code compiled under load would be compiled without them (profiled
   * never to happen) and thrown away on the first {@code registered} after the warm-up, in the
   * first seconds under load (JIT deoptimisation log, row 8e). Met every {@link #streamCalls}
   * calls, they are in every profile.
   */
  private final class Stream implements StreamObserver<WorkClientMsg> {
    private final StreamObserver<WorkServerMsg> out;
    private long sentHere;
    private long openHere;
    private boolean ended;

    Stream(StreamObserver<WorkServerMsg> out) {
      this.out = out;
    }

    @Override
    public void onNext(WorkClientMsg m) {
      switch (m.getBodyCase()) {
        case REGISTER -> {
          streams++;
          out.onNext(
              WorkServerMsg.newBuilder()
                  .setRegistered(
                      WorkRegistered.newBuilder()
                          .setWorkerId(m.getRegister().getWorkerId())
                          .setLeaseTtlMs(30_000))
                  .build());
          for (int i = 0; i < WarmUpTools.SLOTS; i++) {
            sendNext();
          }
        }
        case HEARTBEAT ->
            out.onNext(
                WorkServerMsg.newBuilder()
                    .setHeartbeatAck(WorkHeartbeatAck.getDefaultInstance())
                    .build());
        case RESULT -> {
          if (m.getResult().hasError()) {
            failed++;
          }
          out.onNext(
              WorkServerMsg.newBuilder()
                  .setResultAck(WorkResultAck.newBuilder().setCallId(m.getResult().getCallId()))
                  .build());
          answered();
        }
        case NACK -> {
          failed++;
          answered();
        }
        default -> {}
      }
    }

    @Override
    public void onError(Throwable t) {
      if (!ended) {
        done.completeExceptionally(t);
      }
    }

    @Override
    public void onCompleted() {
      if (!ended) {
        ended = true;
        out.onCompleted();
      }
    }

    private void answered() {
      answered++;
      openHere--;
      sendNext();
      if (answered == sent && finished) {
        done.complete(answered);
      } else if (openHere == 0 && sentHere >= streamCalls && !ended) {
        ended = true; // every result acked: the worker holds nothing for this stream
        out.onCompleted();
      }
    }

    private void sendNext() {
      if (finished || sentHere >= streamCalls || (spent() && openHere >= SETTLE_SLOTS)) {
        return;
      }
      long n = sent++;
      sentHere++;
      openHere++;
      out.onNext(WorkServerMsg.newBuilder().setInvoke(invoke(n)).build());
    }
  }

  /** Whether the budget's calls are all sent (says so once, to {@link #budgetSpent}). */
  private boolean spent() {
    if (budgetSpent.isDone()) {
      return true;
    }
    if (sent >= budgetCalls || System.nanoTime() - endNanos >= 0) {
      budgetSpent.complete(null);
      return true;
    }
    return false;
  }

  /**
   * The n-th call: mostly the no-op, as under load, and every other kind of call path among it
   * (typed, durable write, non-idempotent write with its intent).
   */
  private static WorkInvoke invoke(long n) {
    WorkInvoke.Builder b =
        WorkInvoke.newBuilder()
            .setCallId("warm-up-" + n)
            .setSessionId("s-warm-up")
            .setAgentVersionId("warm-up")
            .setTurn(1)
            .setVersion("default")
            .setArgs(ARGS)
            .setSideEffectClass("read_only");
    return switch ((int) (n & 31)) {
      case 1, 17 -> b.setTool(WarmUpTools.TYPED).setArgs(TYPED_ARGS).build();
      case 9 -> b.setTool(WarmUpTools.WRITE).setSideEffectClass("idempotent_write").build();
      case 25 -> b.setTool(WarmUpTools.INTENT).setSideEffectClass("non_idempotent_write").build();
      default -> b.setTool((n & 1) == 0 ? WarmUpTools.ECHO : WarmUpTools.ECHO_TOO).build();
    };
  }
}
