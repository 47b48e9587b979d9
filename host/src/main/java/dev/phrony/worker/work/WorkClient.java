package dev.phrony.worker.work;

import dev.phrony.worker.call.JsonCodec;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.worker.ops.Readiness;
import dev.phrony.worker.ops.ReconnectReason;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.outbox.ResultOutbox;
import dev.phrony.worker.plugin.HandlerCatalog;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongUnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps one Work stream open to the runtime for the life of the worker: connect, register,
 * serve, and after any end of the stream close it completely, back off with full jitter and
 * reconnect with the same worker id (protocol.md rules 1, 2, 7). Owns the channel, the
 * reconnect loop and the ticker; the {@link Dispatcher} and outbox outlive every stream.
 */
public final class WorkClient implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(WorkClient.class);
  private static final Duration TICK = Duration.ofMillis(100);
  private static final Duration CLOSE_WAIT = Duration.ofSeconds(5);

  private final WorkOptions options;
  private final HandlerCatalog catalog;
  private final ResultOutbox outbox;
  private final InstantSource clock;
  private final Backoff backoff;
  private final ManagedChannel channel;
  private final ScheduledExecutorService ticker;
  /**
   * The channel's one I/O thread. Inbound messages are handled on it directly (nothing in
   * {@link WorkSession#onNext} blocks) and every stream's writes are drained on it (see
   * {@link StreamWriter}), so a call costs two thread hand-offs: to its handler's virtual
   * thread and back.
   */
  private final EventLoopGroup ioThread;
  private final Executor writes;
  private final Dispatcher dispatcher;
  private final WorkerMetrics metrics;
  private final CountDownLatch stopped = new CountDownLatch(1);
  private final CountDownLatch loopDone = new CountDownLatch(1);
  private final AtomicInteger reconnects = new AtomicInteger();
  private volatile WorkSession session;
  private volatile String lastEnd;
  private volatile boolean stopping;
  private Thread loop;

  public WorkClient(WorkOptions options, HandlerCatalog catalog, ResultOutbox outbox) {
    this(options, catalog, outbox, InstantSource.system(),
        bound -> ThreadLocalRandom.current().nextLong(bound));
  }

  /** With metrics. */
  public WorkClient(WorkOptions options, HandlerCatalog catalog, ResultOutbox outbox,
      WorkerMetrics metrics) {
    this(options, catalog, outbox, InstantSource.system(),
        bound -> ThreadLocalRandom.current().nextLong(bound), metrics);
  }

  /** With an injected clock and jitter source, for tests. */
  public WorkClient(WorkOptions options, HandlerCatalog catalog, ResultOutbox outbox,
      InstantSource clock, LongUnaryOperator uniformBelow) {
    this(options, catalog, outbox, clock, uniformBelow, WorkerMetrics.NONE);
  }

  /**
   * Everything injected.
   *
   * @throws IllegalArgumentException if the transport's TLS files cannot be used
   * @throws UncheckedIOException if they cannot be read
   */
  public WorkClient(WorkOptions options, HandlerCatalog catalog, ResultOutbox outbox,
      InstantSource clock, LongUnaryOperator uniformBelow, WorkerMetrics metrics) {
    this.options = options;
    this.metrics = metrics;
    this.catalog = catalog;
    this.outbox = outbox;
    this.clock = clock;
    this.backoff = new Backoff(options.backoffInitial(), options.backoffMax(), uniformBelow);
    this.ticker = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "phrony-work-ticker");
      t.setDaemon(true);
      return t;
    });
    // Netty's factory makes FastThreadLocalThreads: its buffer caches are then plain field
    // reads, not ThreadLocal lookups (5% of this thread's time when it was a plain Thread).
    this.ioThread = new MultiThreadIoEventLoopGroup(1,
        new DefaultThreadFactory("phrony-work-io", true), NioIoHandler.newFactory());
    EventLoop loop = ioThread.next();
    this.writes = r -> {
      if (loop.inEventLoop()) {
        r.run();
      } else {
        loop.execute(r);
      }
    };
    this.dispatcher = new Dispatcher(catalog, outbox, new JsonCodec(), options.maxResultBytes(),
        clock, ticker, metrics);
    try {
      this.channel = channel(options, ioThread);
    } catch (RuntimeException e) {
      ticker.shutdownNow();
      ioThread.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      throw e;
    }
  }

  private static ManagedChannel channel(WorkOptions options, EventLoopGroup io) {
    NettyChannelBuilder b;
    try {
      b = NettyChannelBuilder.forTarget(options.target(),
          options.transport().channelCredentials());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    // No retry layer: the reconnect loop owns retries, and on a stream that lives for hours the
    // layer only adds work to every message.
    b.eventLoopGroup(io).channelType(NioSocketChannel.class).directExecutor().disableRetry();
    b.maxInboundMessageSize(options.maxInboundBytes());
    options.keepAlive().ifPresent(interval -> {
      if (interval.compareTo(WorkOptions.MIN_SAFE_KEEPALIVE) < 0) {
        log.warn("HTTP/2 keepalive every {} s is more often than the runtime's grpc-go server"
            + " allows (5 min): it may answer GOAWAY too_many_pings and end the stream",
            interval.toSeconds());
      }
      b.keepAliveTime(interval.toMillis(), TimeUnit.MILLISECONDS).keepAliveWithoutCalls(false);
    });
    return b.build();
  }

  /** Starts the reconnect loop and returns at once. */
  public synchronized void start() {
    if (loop != null) {
      throw new IllegalStateException("already started");
    }
    ticker.scheduleWithFixedDelay(this::tick, TICK.toMillis(), TICK.toMillis(),
        TimeUnit.MILLISECONDS);
    loop = Thread.ofPlatform().name("phrony-work-loop").daemon().start(this::runLoop);
  }

  private void tick() {
    try {
      WorkSession s = session;
      if (s != null) {
        s.tick();
      }
    } catch (RuntimeException e) {
      log.error("work ticker failed", e);
    }
  }

  private void runLoop() {
    long streamId = 0;
    try {
      while (!stopping) {
        WorkSession s = new WorkSession(++streamId, catalog, dispatcher, outbox,
            options.identity(), clock, dispatcher.inFlightIds(), metrics, writes);
        log.info("connecting to {} (stream {})", options.target(), streamId);
        // Our backoff paces reconnects; the channel's own (1 s and up) would only add to it.
        channel.resetConnectBackoff();
        session = s;
        WorkSession.End end;
        try {
          RuntimeGrpc.RuntimeStub stub = RuntimeGrpc.newStub(channel);
          var credentials = options.transport().callCredentials();
          if (credentials.isPresent()) {
            stub = stub.withCallCredentials(credentials.get());
          }
          stub.work(s);
          s.register();
          s.registration().thenRun(() -> watchConnection(s));
          end = s.ended().join();
        } catch (RuntimeException e) {
          log.error("stream {} could not be used", streamId, e);
          end = new WorkSession.End(io.grpc.Status.fromThrowable(e), e.toString(),
              ReconnectReason.ERROR, false, false);
        }
        if (stopping) {
          break;
        }
        if (end.healthy()) {
          backoff.reset();
        }
        Duration delay = backoff.next();
        reconnects.incrementAndGet();
        lastEnd = end.reason();
        metrics.reconnect(end.cause());
        log.info("reconnect in {} ms because {}", delay.toMillis(), end.reason());
        if (stopped.await(delay.toMillis(), TimeUnit.MILLISECONDS)) {
          break;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      loopDone.countDown();
    }
  }

  /**
   * A runtime shutting down sends GOAWAY and drops its registry before the stream ends; a
   * result sent in that window is for a call it no longer knows and would end the stream with
   * NOT_FOUND. So once the connection leaves READY, the stream is ended from our side and its
   * unsent results stay held for the next registration.
   */
  private void watchConnection(WorkSession s) {
    ConnectivityState state = channel.getState(false);
    if (state != ConnectivityState.READY) {
      if (s.live()) {
        s.abort(ReconnectReason.GOING_AWAY,
            "connection to the runtime is going away (" + state + ")");
      }
      return;
    }
    channel.notifyWhenStateChanged(ConnectivityState.READY, () -> {
      if (s.live()) {
        watchConnection(s);
      }
    });
  }

  /**
   * Graceful shutdown: stop intake ({@code nack draining}), wait up to the drain timeout for
   * running calls to finish and their results to be acked, cancel what is left, close the
   * stream cleanly. Blocks until done.
   */
  public void drain() throws InterruptedException {
    dispatcher.startDraining();
    log.info("draining: {} calls running, waiting up to {} s", dispatcher.runningCount(),
        options.drainTimeout().toSeconds());
    Instant deadline = Instant.now().plus(options.drainTimeout());
    while (Instant.now().isBefore(deadline) && !drained()) {
      Thread.sleep(20); // polling a condition with a deadline, not waiting for time to pass
    }
    int left = dispatcher.runningCount();
    if (left > 0) {
      log.warn("drain timeout: cancelling {} calls still running", left);
      dispatcher.cancelAll();
    }
    stopping = true;
    stopped.countDown();
    WorkSession s = session;
    if (s != null && s.live()) {
      s.halfClose();
      try {
        s.ended().get(CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
      } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
        s.abort(ReconnectReason.ERROR,
            "shutdown: runtime did not close the stream in " + CLOSE_WAIT.toSeconds() + " s");
      }
    }
    log.info("drained");
    close();
  }

  private boolean drained() {
    WorkSession s = session;
    return dispatcher.runningCount() == 0 && (s == null || !s.live() || s.allAcked());
  }

  /** Stops at once: the stream is cancelled, running calls keep their held results. */
  @Override
  public void close() {
    stopping = true;
    stopped.countDown();
    WorkSession s = session;
    if (s != null && s.live()) {
      s.abort(ReconnectReason.ERROR, "worker stopping");
    }
    try {
      if (loop != null) {
        loopDone.await(CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    ticker.shutdownNow();
    channel.shutdownNow();
    ioThread.shutdownGracefully(0, CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
  }

  // ---- views for health, metrics and tests ----

  /** True while the current stream is registered. */
  public boolean registered() {
    WorkSession s = session;
    return s != null && s.registered();
  }

  /**
   * Whether the runtime routes work here now: registered on a live stream, the lease renewed
   * within a TTL, and not draining. Else why not, in one line ({@code /readyz}).
   */
  public Readiness readiness() {
    if (dispatcher.draining()) {
      return Readiness.notReady("draining for shutdown");
    }
    WorkSession s = session;
    if (s == null || !s.registered()) {
      String last = lastEnd;
      return Readiness.notReady("not registered with the runtime at " + options.target()
          + (last == null ? "" : " (last stream ended: " + last + ")"));
    }
    if (!s.leaseFresh()) {
      return Readiness.notReady("lease not renewed: no heartbeat_ack for a lease TTL of "
          + s.heartbeat().ttl().toMillis() + " ms");
    }
    return Readiness.READY;
  }

  public int reconnects() {
    return reconnects.get();
  }

  public Dispatcher dispatcher() {
    return dispatcher;
  }
}
