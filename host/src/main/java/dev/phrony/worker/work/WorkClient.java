package dev.phrony.worker.work;

import dev.phrony.worker.call.CallPipeline;
import dev.phrony.worker.call.JsonCodec;
import dev.phrony.worker.ops.Readiness;
import dev.phrony.worker.ops.ReconnectReason;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.outbox.ResultOutbox;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.time.ExecutorScheduler;
import dev.phrony.worker.time.Scheduler;
import dev.phrony.worker.transport.TlsFailure;
import io.grpc.CallOptions;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongUnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps one Work stream open to the runtime for the life of the worker: connect, register,
 * serve, and after any end of the stream back off with full jitter and reconnect with the same
 * worker id (protocol.md rules 1, 2, 7). A new stream is opened only once the old one has ended
 * (gRPC called its observer's last method). Owns the channel and the reconnect schedule; the
 * {@link Dispatcher} and the outbox outlive every stream.
 */
public final class WorkClient implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(WorkClient.class);
  /** How long teardown waits for gRPC to close a stream it was asked to close. */
  private static final Duration CLOSE_WAIT = Duration.ofSeconds(5);

  /**
   * Netty's native epoll transport where it loads (Linux x86-64), else NIO: fewer system calls
   * and allocations per read and write, and an eventfd for wake-ups. {@code
   * -Dphrony.work.transport=nio} forces NIO (to compare them).
   */
  private record IoTransport(String name, java.util.function.Supplier<IoHandlerFactory> handlers,
      java.util.function.Supplier<Channel> newChannel) {}

  private static final IoTransport TRANSPORT =
      !"nio".equals(System.getProperty("phrony.work.transport")) && Epoll.isAvailable()
          ? new IoTransport("epoll", EpollIoHandler::newFactory, EpollSocketChannel::new)
          : new IoTransport("nio", NioIoHandler::newFactory, NioSocketChannel::new);

  private final WorkOptions options;
  private final HandlerCatalog catalog;
  private final Scheduler scheduler;
  private final ExecutorScheduler ownScheduler;
  private final Backoff backoff;
  private final ManagedChannel channel;
  /**
   * The channel's one I/O thread. Inbound messages are handled on it directly (nothing in
   * {@link WorkSession#onNext} blocks) and every stream's writes are drained on it (see
   * {@link StreamWriter}).
   */
  private final EventLoopGroup ioThread;
  private final Executor writes;
  private final Executor loop;
  private final Dispatcher dispatcher;
  private final ResultOutbox outbox;
  private volatile String lastTlsProblem;
  private final WorkerMetrics metrics;
  private final AtomicInteger reconnects = new AtomicInteger();
  private volatile WorkSession session;
  private volatile String lastEnd;
  private volatile boolean stopping;
  private volatile Scheduler.Handle reconnect = Scheduler.NONE;
  private long streamIds; // in the dispatcher's context
  /** NOT_FOUND ends of registered streams in a row (the reconnect loop's, one at a time). */
  private int notFoundInRow;
  static final int AT_ONCE_IN_A_ROW = 3;
  private boolean started;
  private boolean closed;

  public WorkClient(WorkOptions options, HandlerCatalog catalog, ResultOutbox outbox) {
    this(options, catalog, outbox, WorkerMetrics.NONE);
  }

  /** With metrics. */
  public WorkClient(WorkOptions options, HandlerCatalog catalog, ResultOutbox outbox,
      WorkerMetrics metrics) {
    this(options, catalog, outbox, null, bound -> ThreadLocalRandom.current().nextLong(bound),
        metrics);
  }

  /** With an injected scheduler (timers and their clock) and jitter source, for tests. */
  public WorkClient(WorkOptions options, HandlerCatalog catalog, ResultOutbox outbox,
      Scheduler scheduler, LongUnaryOperator uniformBelow) {
    this(options, catalog, outbox, scheduler, uniformBelow, WorkerMetrics.NONE);
  }

  /**
   * Everything injected; a null {@code scheduler} means one of the client's own, on the system
   * clock.
   *
   * @throws IllegalArgumentException if the transport's TLS files cannot be used
   * @throws UncheckedIOException if they cannot be read
   */
  public WorkClient(WorkOptions options, HandlerCatalog catalog, ResultOutbox outbox,
      Scheduler scheduler, LongUnaryOperator uniformBelow, WorkerMetrics metrics) {
    this.options = options;
    this.metrics = metrics;
    this.catalog = catalog;
    this.ownScheduler = scheduler == null ? new ExecutorScheduler("phrony-work-timer") : null;
    this.scheduler = scheduler == null ? ownScheduler : scheduler;
    this.backoff = new Backoff(options.backoffInitial(), options.backoffMax(), uniformBelow);
    // Netty's factory makes FastThreadLocalThreads: its buffer caches are then plain field
    // reads, not ThreadLocal lookups (5% of this thread's time when it was a plain Thread).
    this.ioThread = new MultiThreadIoEventLoopGroup(1,
        new DefaultThreadFactory("phrony-work-io", true), TRANSPORT.handlers().get());
    EventLoop loop = ioThread.next();
    this.loop = loop;
    this.writes = r -> {
      if (loop.inEventLoop()) {
        r.run();
      } else {
        loop.execute(r);
      }
    };
    this.outbox = outbox;
    this.dispatcher = new Dispatcher(catalog, outbox, new CallPipeline(new JsonCodec(),
        new CallPipeline.Settings(options.maxResultBytes(), options.exposeInternalErrors())),
        this.scheduler, metrics, loop::inEventLoop, loop);
    try {
      this.channel = channel(options, ioThread, dispatcher.timings());
    } catch (RuntimeException e) {
      if (ownScheduler != null) {
        ownScheduler.close();
      }
      ioThread.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      throw e;
    }
  }

  private static ManagedChannel channel(WorkOptions options, EventLoopGroup io,
      WireTimings timings) {
    NettyChannelBuilder b;
    try {
      b = NettyChannelBuilder.forTarget(options.target(),
          options.transport().channelCredentials());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    // No retry layer: the reconnect loop owns retries, and on a stream that lives for hours the
    // layer only adds work to every message.
    b.eventLoopGroup(io).directExecutor().disableRetry();
    b.channelFactory(() -> {
      Channel ch = TRANSPORT.newChannel().get();
      ch.pipeline().addFirst(new WireTap(timings)); // next to the socket: before gRPC's handlers
      return ch;
    });
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

  /** Opens the first stream and returns at once. */
  public synchronized void start() {
    if (started) {
      throw new IllegalStateException("already started");
    }
    started = true;
    connect();
  }

  /**
   * Opens a stream and registers on it. Runs in the dispatcher's context, so the calls it
   * advertises are exactly those the dispatcher holds, and the previous stream's calls are
   * already detached (its end was posted there first).
   */
  private void connect() {
    dispatcher.execute(() -> {
      if (stopping) {
        return;
      }
      WorkSession s = new WorkSession(++streamIds, catalog, dispatcher, options.identity(),
          scheduler, dispatcher.inFlightIds(), metrics, writes, loop);
      log.info("connecting to {} (stream {}, {})", options.target(), s.id(), TRANSPORT.name());
      // Our backoff paces reconnects; the channel's own (1 s and up) would only add to it.
      channel.resetConnectBackoff();
      session = s;
      try {
        CallOptions callOptions = CallOptions.DEFAULT;
        var credentials = options.transport().callCredentials();
        if (credentials.isPresent()) {
          callOptions = callOptions.withCallCredentials(credentials.get());
        }
        // The generated stub's call, with invokes and acks read by Inbound's own marshaller.
        ClientCalls.asyncBidiStreamingCall(channel.newCall(Inbound.WORK_METHOD, callOptions), s);
        s.register();
        s.registration().thenRun(() -> watchConnection(s));
        s.ended().whenComplete((end, t) -> streamEnded(end));
      } catch (RuntimeException e) {
        log.error("stream {} could not be used", s.id(), e);
        streamEnded(new WorkSession.End(io.grpc.Status.fromThrowable(e), e.toString(),
            ReconnectReason.ERROR, false, false));
      }
    });
  }

  /** The stream ended: back off, then connect again (or stop, if stopping). */
  private void streamEnded(WorkSession.End end) {
    if (stopping) {
      return;
    }
    if (end.healthy()) {
      backoff.reset();
    }
    Duration delay = reconnectAtOnce(end) ? Duration.ZERO : backoff.next();
    reconnects.incrementAndGet();
    lastEnd = end.reason();
    metrics.reconnect(end.cause());
    Optional<TlsFailure> tls = TlsFailure.of(end.status().getCause());
    if (tls.isPresent() && !tls.get().problem().equals(lastTlsProblem)) {
      // Once per distinct problem: retried forever, the cause would otherwise never show.
      lastTlsProblem = tls.get().problem();
      log.warn("TLS to {} failed: {} (cause: {})", options.target(), tls.get().problem(),
          tls.get().chain());
    } else if (tls.isEmpty() && end.registered()) {
      lastTlsProblem = null;
    }
    log.info("reconnect in {} ms because {}", delay.toMillis(), end.reason());
    reconnect = scheduler.schedule(this::connect, delay);
  }

  /**
   * A registered stream the runtime ended {@code NOT_FOUND} (a result that crossed its cancel on
   * the wire, or a registration it dropped) is replaced at once: its other calls are in flight,
   * and every moment unregistered is one in which their results cannot be acked and new calls
   * are routed to the dead entry. Up to {@value #AT_ONCE_IN_A_ROW} times in a row; a runtime that
   * keeps doing it gets the backoff.
   */
  private boolean reconnectAtOnce(WorkSession.End end) {
    if (end.status().getCode() != io.grpc.Status.Code.NOT_FOUND || !end.registered()) {
      notFoundInRow = 0;
      return false;
    }
    return ++notFoundInRow <= AT_ONCE_IN_A_ROW;
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
        // A runtime going away drops every registration itself: no need to wait for it.
        s.cut(ReconnectReason.GOING_AWAY,
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
   * Graceful shutdown: stop intake ({@code nack draining}), wait up to the drain timeout (a
   * timer of the scheduler) for running calls to finish and their results to be acked, cancel
   * what is left, close the stream cleanly. Blocks until done.
   */
  public void drain() throws InterruptedException {
    dispatcher.startDraining();
    log.info("draining: {} calls running, waiting up to {} s", dispatcher.runningCount(),
        options.drainTimeout().toSeconds());
    CompletableFuture<Void> idle = dispatcher.whenIdle();
    CompletableFuture<Void> timedOut = new CompletableFuture<>();
    Scheduler.Handle timer = scheduler.schedule(() -> timedOut.complete(null),
        options.drainTimeout());
    try {
      CompletableFuture.anyOf(idle, timedOut).get();
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    } finally {
      timer.cancel();
    }
    if (!idle.isDone()) {
      int left = dispatcher.runningCount();
      if (left > 0) {
        log.warn("drain timeout: cancelling {} calls still running", left);
      }
      dispatcher.cancelAll();
    }
    stopping = true;
    reconnect.cancel();
    WorkSession s = session;
    if (s != null && s.live()) {
      s.halfClose();
      if (!await(s.ended(), CLOSE_WAIT)) {
        s.cut(ReconnectReason.ERROR,
            "shutdown: runtime did not close the stream in " + CLOSE_WAIT.toSeconds() + " s");
      }
    }
    log.info("drained");
    close();
  }

  /** Stops at once: the stream is cancelled, running calls keep their held results. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    stopping = true;
    reconnect.cancel();
    WorkSession s = session;
    if (s != null && s.live()) {
      s.cut(ReconnectReason.ERROR, "worker stopping");
      await(s.ended(), CLOSE_WAIT);
    }
    channel.shutdownNow();
    ioThread.shutdownGracefully(0, CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
    if (ownScheduler != null) {
      ownScheduler.close();
    }
  }

  /** Waits for gRPC to finish closing something (a bound, not a timer of the worker's logic). */
  private static boolean await(CompletableFuture<?> f, Duration bound) {
    try {
      f.get(bound.toMillis(), TimeUnit.MILLISECONDS);
      return true;
    } catch (TimeoutException | ExecutionException e) {
      return f.isDone();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
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
    int runaway = dispatcher.runningApart();
    if (runaway > options.maxRunaway()) {
      return Readiness.notReady(runaway + " handlers still run after their call was cancelled or"
          + " timed out (they ignore interrupts; more than --max-runaway-handlers "
          + options.maxRunaway() + "): fix the plugin, restart the worker to end them");
    }
    Optional<String> disk = outbox.diskProblem();
    if (disk.isPresent()) {
      return Readiness.notReady("the outbox cannot write its results to disk (" + disk.get()
          + "); they are held, not sent, until it can");
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
