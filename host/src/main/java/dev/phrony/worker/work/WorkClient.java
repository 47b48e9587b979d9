package dev.phrony.worker.work;

import dev.phrony.worker.call.CallPipeline;
import dev.phrony.worker.call.JsonCodec;
import dev.phrony.worker.ops.Readiness;
import dev.phrony.worker.ops.ReconnectReason;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.outbox.ResultOutbox;
import dev.phrony.worker.plugin.CatalogChange;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.time.ExecutorScheduler;
import dev.phrony.worker.time.Scheduler;
import dev.phrony.worker.transport.TlsFailure;
import io.grpc.CallOptions;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
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
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
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
 * Keeps one Work stream open to the runtime for the life of the worker: connect, register, serve,
 * and after any end of the stream back off with full jitter and reconnect with the same worker id
 * (protocol.md rules 1, 2, 7). A new stream is opened only once the old one has ended (gRPC called
 * its observer's last method). Owns the channel and the reconnect schedule; the {@link Dispatcher}
 * and the outbox outlive every stream.
 */
public final class WorkClient implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(WorkClient.class);

  /** How long teardown waits for gRPC to close a stream it was asked to close. */
  private static final Duration CLOSE_WAIT = Duration.ofSeconds(5);

  /**
   * Netty's native epoll transport where it loads (Linux x86-64), else NIO: fewer system calls and
   * allocations per read and write, and an eventfd for wake-ups. {@code
   * -Dphrony.work.transport=nio} forces NIO (to compare them).
   */
  private record IoTransport(
      String name,
      java.util.function.Supplier<IoHandlerFactory> handlers,
      java.util.function.Supplier<Channel> newChannel) {}

  /** This worker's I/O transport, chosen when it is built (a test may choose per worker). */
  private final IoTransport transport =
      !"nio".equals(System.getProperty("phrony.work.transport")) && Epoll.isAvailable()
          ? new IoTransport("epoll", EpollIoHandler::newFactory, EpollSocketChannel::new)
          : new IoTransport("nio", NioIoHandler::newFactory, NioSocketChannel::new);

  /** The longest wait between tries while the runtime cannot be reached at all. */
  static final Duration UNREACHABLE_MAX_DELAY = Duration.ofMillis(500);

  /**
   * How long after a lease has lapsed (as far as we can tell) an old stream still waits for invokes
   * in transit.
   */
  static final Duration LAPSE_MARGIN = Duration.ofMillis(250);

  /**
   * One plugin generation: its number (1 first), the identity it registers under ({@link
   * WorkerIdentity#forGeneration}) and the handlers it advertises.
   */
  record Generation(int number, WorkerIdentity identity, HandlerSet handlers) {}

  /**
   * A reload's hand-over to generation {@code number}: {@code registered} once a stream of it (or a
   * newer one) is registered, {@code retired} once no stream of an older one is open.
   */
  public record Handover(
      int number, CompletableFuture<Void> registered, CompletableFuture<Void> retired) {}

  private final WorkOptions options;
  private final Scheduler scheduler;
  private final ExecutorScheduler ownScheduler;
  private final Backoff backoff;
  private final ManagedChannel channel;

  /** Work with this worker's own inbound marshaller (its string cache is this worker's). */
  private final MethodDescriptor<Outbound, Inbound> workMethod = Inbound.workMethod();

  /**
   * The channel's one I/O thread. Inbound messages are handled on it directly (nothing in {@link
   * WorkSession#onNext} blocks) and every stream's writes are drained on it (see {@link
   * StreamWriter}).
   */
  private final EventLoopGroup ioThread;

  private final Executor writes;
  private final Executor loop;
  private final Dispatcher dispatcher;
  private final ResultOutbox outbox;
  private volatile String lastTlsProblem;

  /** The unresolvable host was logged (in the dispatcher's context). */
  private boolean warnedUnresolvable;

  private final WorkerMetrics metrics;
  private final AtomicInteger reconnects = new AtomicInteger();

  /** The newest generation's stream (the one the reconnect loop keeps open). */
  private volatile WorkSession session;

  /** The plugin generation served now: new streams register it. */
  private volatile Generation generation;

  /**
   * Every stream not yet ended, with its generation's number: the current one, older ones winding
   * down.
   */
  private final Map<WorkSession, Integer> open = new ConcurrentHashMap<>();

  /** Handovers whose older streams have not all ended yet; in the dispatcher's context. */
  private final List<Handover> handovers = new ArrayList<>();

  /** Set by a drain that takes the worker out of routing: no stream is opened again. */
  private volatile boolean leaving;

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
  public WorkClient(
      WorkOptions options, HandlerCatalog catalog, ResultOutbox outbox, WorkerMetrics metrics) {
    this(
        options,
        catalog,
        outbox,
        null,
        bound -> ThreadLocalRandom.current().nextLong(bound),
        metrics);
  }

  /** With an injected scheduler (timers and their clock) and jitter source, for tests. */
  public WorkClient(
      WorkOptions options,
      HandlerCatalog catalog,
      ResultOutbox outbox,
      Scheduler scheduler,
      LongUnaryOperator uniformBelow) {
    this(options, catalog, outbox, scheduler, uniformBelow, WorkerMetrics.NONE);
  }

  /**
   * Everything injected; a null {@code scheduler} means one of the client's own, on the system
   * clock.
   *
   * @throws IllegalArgumentException if the transport's TLS files cannot be used
   * @throws UncheckedIOException if they cannot be read
   */
  public WorkClient(
      WorkOptions options,
      HandlerCatalog catalog,
      ResultOutbox outbox,
      Scheduler scheduler,
      LongUnaryOperator uniformBelow,
      WorkerMetrics metrics) {
    this.options = options;
    this.metrics = metrics;
    this.ownScheduler = scheduler == null ? new ExecutorScheduler("phrony-work-timer") : null;
    this.scheduler = scheduler == null ? ownScheduler : scheduler;
    this.backoff = new Backoff(options.backoffInitial(), options.backoffMax(), uniformBelow);
    // Netty's factory makes FastThreadLocalThreads: its buffer caches are then plain field
    // reads, not ThreadLocal lookups (5% of this thread's time when it was a plain Thread).
    this.ioThread =
        new MultiThreadIoEventLoopGroup(
            1, new DefaultThreadFactory("phrony-work-io", true), transport.handlers().get());
    EventLoop loop = ioThread.next();
    this.loop = loop;
    this.writes =
        r -> {
          if (loop.inEventLoop()) {
            r.run();
          } else {
            loop.execute(r);
          }
        };
    this.outbox = outbox;
    this.dispatcher =
        new Dispatcher(
            catalog,
            outbox,
            new CallPipeline(
                new JsonCodec(),
                new CallPipeline.Settings(
                    options.maxResultBytes(), options.exposeInternalErrors())),
            this.scheduler,
            metrics,
            loop::inEventLoop,
            loop);
    this.generation =
        new Generation(
            options.generation(),
            options
                .identity()
                .forGeneration(options.generation(), options.identity().imageDigest()),
            dispatcher.initialHandlers());
    try {
      this.channel = channel(options, transport, ioThread, dispatcher.timings());
    } catch (RuntimeException e) {
      if (ownScheduler != null) {
        ownScheduler.close();
      }
      ioThread.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      throw e;
    }
  }

  private static ManagedChannel channel(
      WorkOptions options, IoTransport transport, EventLoopGroup io, WireTimings timings) {
    NettyChannelBuilder b;
    try {
      b = NettyChannelBuilder.forTarget(options.target(), options.transport().channelCredentials());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    // No retry layer: the reconnect loop owns retries, and on a stream that lives for hours the
    // layer only adds work to every message.
    b.eventLoopGroup(io).directExecutor().disableRetry();
    b.channelFactory(
        () -> {
          Channel ch = transport.newChannel().get();
          ch.pipeline()
              .addFirst(new WireTap(timings)); // next to the socket: before gRPC's handlers
          return ch;
        });
    b.maxInboundMessageSize(options.maxInboundBytes());
    options
        .keepAlive()
        .ifPresent(
            interval -> {
              if (interval.compareTo(WorkOptions.MIN_SAFE_KEEPALIVE) < 0) {
                log.warn(
                    "HTTP/2 keepalive every {} s is more often than the runtime's grpc-go server"
                        + " allows (5 min): it may answer GOAWAY too_many_pings and end the stream",
                    interval.toSeconds());
              }
              b.keepAliveTime(interval.toMillis(), TimeUnit.MILLISECONDS)
                  .keepAliveWithoutCalls(false);
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
   * advertises are exactly those the dispatcher holds, and the previous stream's calls are already
   * detached (its end was posted there first).
   */
  private void connect() {
    dispatcher.execute(
        () -> {
          if (stopping || leaving) {
            return;
          }
          Generation g = generation;
          WorkSession s =
              new WorkSession(
                  ++streamIds,
                  g.handlers(),
                  dispatcher,
                  g.identity(),
                  scheduler,
                  dispatcher.inFlightIds(),
                  metrics,
                  writes,
                  loop);
          log.info(
              "connecting to {} (stream {}, {}, as {})",
              options.target(),
              s.id(),
              transport.name(),
              g.identity().workerId());
          // Our backoff paces reconnects; the channel's own (1 s and up) would only add to it.
          channel.resetConnectBackoff();
          session = s;
          open.put(s, g.number());
          try {
            CallOptions callOptions = CallOptions.DEFAULT;
            var credentials = options.transport().callCredentials();
            if (credentials.isPresent()) {
              callOptions = callOptions.withCallCredentials(credentials.get());
            }
            // The generated stub's call, with invokes and acks read by Inbound's own marshaller.
            ClientCalls.asyncBidiStreamingCall(channel.newCall(workMethod, callOptions), s);
            s.register();
            s.registration()
                .thenRun(
                    () -> {
                      watchConnection(s);
                      dispatcher.execute(() -> retireOlderThan(g.number()));
                    });
            s.ended().whenComplete((end, t) -> dispatcher.execute(() -> streamEnded(s, end)));
          } catch (RuntimeException e) {
            log.error("stream {} could not be used", s.id(), e);
            streamEnded(
                s,
                new WorkSession.End(
                    io.grpc.Status.fromThrowable(e),
                    e.toString(),
                    ReconnectReason.ERROR,
                    false,
                    false));
          }
        });
  }

  // ---- plugin generations ----

  /**
   * Serves {@code next} from now on (a plugin reload), within the runtime's rules:
   *
   * <ul>
   *   <li>Advertised exactly as now (a plugin rebuilt with the same descriptors): nothing goes on
   *       the wire; later calls start on the new handlers.
   *   <li>Otherwise generation {@code number} opens a stream of its own under its own id and
   *       registers {@code next} there. Once it is registered, every older stream leaves routing
   *       (no more heartbeats: the runtime skips it once its lease lapses, and still takes its
   *       results), serves the invokes that still reach it with its own handlers, and is closed
   *       once nothing runs on it and every result sent on it was acked. One that outlives the
   *       drain timeout has its calls cancelled, as a drain does, and is closed.
   * </ul>
   *
   * @return its {@code retired} completes once no stream of an older generation is open: from then
   *     on no call can reach the handlers that {@code next} replaced (see {@link #whenUnused} for
   *     those still running)
   */
  public Handover serve(HandlerCatalog next, int number, String imageDigest) {
    Handover h = new Handover(number, new CompletableFuture<>(), new CompletableFuture<>());
    CompletableFuture<Void> done = h.retired();
    dispatcher.execute(
        () -> {
          Generation now = generation;
          if (!CatalogChange.between(now.handlers().catalog(), next).advertisementChanged()) {
            dispatcher.rebind(now.handlers(), next);
            open.keySet().stream()
                .map(WorkSession::handlers)
                .filter(set -> set != now.handlers())
                .distinct()
                .forEach(set -> dispatcher.rebind(set, next)); // generations winding down
            log.info(
                "plugins reloaded with the same advertisement: generation {} serves on, later"
                    + " calls start on the new handlers",
                now.number());
            h.registered().complete(null);
            done.complete(null);
            return;
          }
          if (number <= now.number()) {
            IllegalArgumentException e =
                new IllegalArgumentException(
                    "generation " + number + " is not newer than " + now.number());
            h.registered().completeExceptionally(e);
            done.completeExceptionally(e);
            return;
          }
          generation =
              new Generation(
                  number,
                  options.identity().forGeneration(number, imageDigest),
                  dispatcher.handlerSet(next));
          handovers.add(h);
          if (stopping || leaving) {
            handoversDone();
            return;
          }
          reconnect.cancel(); // a stream waiting to reconnect opens as the new generation, now
          connect(); // the old stream serves on until the new one is registered
        });
    return h;
  }

  /** The generation served now. */
  public int generation() {
    return generation.number();
  }

  /** Completes once no call runs, or is still to run, code of {@code loaders}. */
  public CompletableFuture<Void> whenUnused(Set<ClassLoader> loaders) {
    return dispatcher.whenUnused(loaders);
  }

  /** The channel's connectivity now, without asking it to connect (tests). */
  ConnectivityState channelState() {
    return channel.getState(false);
  }

  /** The streams open now (tests). */
  List<WorkSession> openStreams() {
    return List.copyOf(open.keySet());
  }

  /** Number of Work streams open now (two while a reload hands over). */
  public int streamsOpen() {
    return open.size();
  }

  /** In the context: generation {@code number} is registered; every older stream winds down. */
  private void retireOlderThan(int number) {
    handovers.forEach(
        h -> {
          if (h.number() <= number) {
            h.registered().complete(null);
          }
        });
    open.forEach(
        (s, gen) -> {
          if (gen < number && s.live() && !s.leaving()) {
            retire(s);
          }
        });
  }

  /** Takes {@code s} out of routing, then closes it once nothing is left on it. */
  private void retire(WorkSession s) {
    s.leaveRouting();
    log.info(
        "stream {} ({}) leaves routing for the new plugin generation: its lease lapses by {},"
            + " then it closes once its calls are done (at most {} s)",
        s.id(),
        s.identity().workerId(),
        s.leaseLapses(),
        options.drainTimeout().toSeconds());
    Scheduler.Handle timeout =
        scheduler.schedule(
            () ->
                dispatcher.execute(
                    () -> {
                      if (s.live()) {
                        log.warn(
                            "stream {} outlived the drain timeout after a plugin reload: cancelling its"
                                + " calls and closing it (results it still waits an ack for stay held, as after a"
                                + " drain)",
                            s.id());
                        dispatcher.cancelOn(s, "the drain timeout passed after a plugin reload");
                        dispatcher.execute(
                            () ->
                                s.abort(
                                    ReconnectReason.RUNTIME_CLOSED,
                                    "closed: the drain timeout passed after a plugin reload"));
                      }
                    }),
            options.drainTimeout());
    s.ended().whenComplete((e, t) -> timeout.cancel());
    lapsed(s).thenRun(() -> closeWhenIdle(s));
  }

  /**
   * Completes once the lease of {@code s}, which no longer heartbeats, has surely lapsed (an ack
   * that was on its way moves it on), or once {@code s} ended. Timers of the scheduler, checked in
   * the context.
   */
  private CompletableFuture<Void> lapsed(WorkSession s) {
    CompletableFuture<Void> f = new CompletableFuture<>();
    s.ended().whenComplete((e, t) -> f.complete(null));
    checkLapsed(s, s.leaseLapses(), f);
    return f;
  }

  private void checkLapsed(WorkSession s, Instant lapses, CompletableFuture<Void> f) {
    Duration wait = Duration.between(scheduler.clock().instant(), lapses).plus(LAPSE_MARGIN);
    scheduler.schedule(
        () ->
            dispatcher.execute(
                () -> {
                  Instant now = s.leaseLapses();
                  if (s.live() && now.isAfter(lapses)) {
                    checkLapsed(s, now, f);
                  } else {
                    f.complete(null);
                  }
                }),
        wait);
  }

  private void closeWhenIdle(WorkSession s) {
    dispatcher
        .whenIdleOn(s)
        .thenRun(
            () -> {
              if (s.live()) {
                log.info(
                    "stream {} ({}): no call left on it, closing it",
                    s.id(),
                    s.identity().workerId());
                s.abort(
                    ReconnectReason.RUNTIME_CLOSED, "closed after the plugin generation moved on");
              }
            });
  }

  /** In the context: completes the hand-overs no older stream holds up any more. */
  private void handoversDone() {
    handovers.removeIf(
        h -> {
          boolean older = open.values().stream().anyMatch(g -> g < h.number());
          if (!older) {
            h.retired().complete(null);
          }
          return !older;
        });
  }

  /**
   * In the context: a stream ended. The current generation's backs off and connects again (or
   * stops, if stopping); an older one's only lets its hand-over complete.
   */
  private void streamEnded(WorkSession s, WorkSession.End end) {
    Integer gen = open.remove(s);
    if (s != session) {
      if (gen != null && gen != generation.number()) {
        dispatcher.dropHandlerSet(s.handlers());
      }
      log.info(
          "stream {} ({}) of plugin generation {} ended: {}",
          s.id(),
          s.identity().workerId(),
          gen,
          end.reason());
      handoversDone();
      return;
    }
    handoversDone();
    if (stopping || leaving) {
      return;
    }
    if (end.healthy() || end.registered()) {
      backoff.reset(); // it reached the runtime: a new failure starts from the first window
    }
    Duration delay = reconnectAtOnce(end) ? Duration.ZERO : backoff.next();
    if (end.status().getCode() == io.grpc.Status.Code.UNAVAILABLE
        && delay.compareTo(UNREACHABLE_MAX_DELAY) > 0) {
      // Not reachable (refused, reset, no route): a try costs the runtime nothing, and one that
      // is back must be served again within a second or so (the channel may fail the first try
      // or two after it returns), not after a window grown over its whole outage.
      delay = UNREACHABLE_MAX_DELAY;
    }
    reconnects.incrementAndGet();
    lastEnd = end.reason();
    metrics.reconnect(end.cause());
    Optional<TlsFailure> tls = TlsFailure.of(end.status().getCause());
    if (tls.isPresent() && !tls.get().problem().equals(lastTlsProblem)) {
      // Once per distinct problem: retried forever, the cause would otherwise never show.
      lastTlsProblem = tls.get().problem();
      log.warn(
          "TLS to {} failed: {} (cause: {})",
          options.target(),
          tls.get().problem(),
          tls.get().chain());
    } else if (tls.isEmpty() && end.registered()) {
      lastTlsProblem = null;
    }
    if (unresolvable(end.status())) {
      if (!warnedUnresolvable) {
        // Once: DNS may come back, so the worker keeps trying, but the reason must show.
        warnedUnresolvable = true;
        log.warn(
            "the runtime's host in {} cannot be resolved ({}); retrying every {} ms until it"
                + " can: check --runtime / PHRONY_RUNTIME_ADDR",
            options.target(),
            end.status().getDescription(),
            UNREACHABLE_MAX_DELAY.toMillis());
      }
    } else if (end.registered()) {
      warnedUnresolvable = false;
    }
    log.info("reconnect in {} ms because {}", delay.toMillis(), end.reason());
    reconnect = scheduler.schedule(this::connect, delay);
  }

  /** True when the stream failed because the runtime's host name does not resolve. */
  private static boolean unresolvable(io.grpc.Status status) {
    for (Throwable t = status.getCause(); t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof java.net.UnknownHostException) {
        return true;
      }
    }
    String d = status.getDescription();
    return d != null && d.contains("Unable to resolve host");
  }

  /**
   * A registered stream the runtime ended {@code NOT_FOUND} (a result that crossed its cancel on
   * the wire, or a registration it dropped) is replaced at once: its other calls are in flight, and
   * every moment unregistered is one in which their results cannot be acked and new calls are
   * routed to the dead entry. Up to {@value #AT_ONCE_IN_A_ROW} times in a row; a runtime that keeps
   * doing it gets the backoff.
   */
  private boolean reconnectAtOnce(WorkSession.End end) {
    if (end.status().getCode() != io.grpc.Status.Code.NOT_FOUND || !end.registered()) {
      notFoundInRow = 0;
      return false;
    }
    return ++notFoundInRow <= AT_ONCE_IN_A_ROW;
  }

  /**
   * A runtime shutting down sends GOAWAY and drops its registry before the stream ends; a result
   * sent in that window is for a call it no longer knows and would end the stream with NOT_FOUND.
   * So once the connection leaves READY, the stream is ended from our side and its unsent results
   * stay held for the next registration.
   */
  private void watchConnection(WorkSession s) {
    ConnectivityState state = channel.getState(false);
    if (state != ConnectivityState.READY) {
      if (s.live()) {
        // A runtime going away drops every registration itself: no need to wait for it.
        s.cut(
            ReconnectReason.GOING_AWAY, "connection to the runtime is going away (" + state + ")");
      }
      return;
    }
    channel.notifyWhenStateChanged(
        ConnectivityState.READY,
        () -> {
          if (s.live()) {
            watchConnection(s);
          }
        });
  }

  /**
   * Graceful shutdown: stop intake ({@code nack draining}), wait up to the drain timeout (a timer
   * of the scheduler) for running calls to finish and their results to be acked, cancel what is
   * left, close the stream cleanly. Blocks until done.
   */
  public void drain() throws InterruptedException {
    Instant deadline = scheduler.clock().instant().plus(options.drainTimeout());
    if (options.leaveRoutingOnDrain()) {
      leaveRouting(deadline);
    }
    dispatcher.startDraining();
    log.info(
        "draining: {} calls running, waiting up to {} s",
        dispatcher.runningCount(),
        Math.max(0, Duration.between(scheduler.clock().instant(), deadline).toSeconds()));
    CompletableFuture<Void> idle = dispatcher.whenIdle();
    CompletableFuture<Void> timedOut = new CompletableFuture<>();
    Scheduler.Handle timer =
        scheduler.schedule(
            () -> timedOut.complete(null), Duration.between(scheduler.clock().instant(), deadline));
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
    for (WorkSession s : List.copyOf(open.keySet())) {
      if (s.live()) {
        s.halfClose();
        if (!await(s.ended(), CLOSE_WAIT)) {
          s.cut(
              ReconnectReason.ERROR,
              "shutdown: runtime did not close the stream in " + CLOSE_WAIT.toSeconds() + " s");
        }
      }
    }
    log.info("drained");
    close();
  }

  /**
   * The first part of a drain: every registered stream stops heartbeating and serves what still
   * comes until its lease has lapsed (or {@code deadline}), so the runtime routes new calls to
   * other workers instead of seeing them refused. No stream is opened again after this.
   */
  private void leaveRouting(Instant deadline) throws InterruptedException {
    leaving = true;
    CompletableFuture<List<CompletableFuture<Void>>> leases = new CompletableFuture<>();
    dispatcher.execute(
        () -> {
          reconnect.cancel();
          List<CompletableFuture<Void>> each = new ArrayList<>();
          for (WorkSession s : open.keySet()) {
            if (s.registered()) {
              s.leaveRouting();
              each.add(lapsed(s));
            }
          }
          leases.complete(each);
        });
    List<CompletableFuture<Void>> each;
    try {
      each = leases.get();
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    }
    if (each.isEmpty()) {
      return;
    }
    log.info(
        "draining: left routing; serving what still comes until the lease lapses (at most"
            + " {} ms; {} calls running)",
        Math.max(0, Duration.between(scheduler.clock().instant(), deadline).toMillis()),
        dispatcher.runningCount());
    CompletableFuture<Void> deadlinePassed = new CompletableFuture<>();
    Scheduler.Handle timer =
        scheduler.schedule(
            () -> deadlinePassed.complete(null),
            Duration.between(scheduler.clock().instant(), deadline));
    try {
      CompletableFuture.anyOf(
              CompletableFuture.allOf(each.toArray(CompletableFuture[]::new)), deadlinePassed)
          .get();
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    } finally {
      timer.cancel();
    }
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
    for (WorkSession s : List.copyOf(open.keySet())) {
      if (s.live()) {
        s.cut(ReconnectReason.ERROR, "worker stopping");
        await(s.ended(), CLOSE_WAIT);
      }
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
    WorkSession s = serving();
    return s != null && s.registered();
  }

  /**
   * The stream that takes new calls: the newest generation's once it is registered; until then (a
   * reload's new stream still registering) the older one that still heartbeats.
   */
  private WorkSession serving() {
    WorkSession s = session;
    if (s != null && s.registered()) {
      return s;
    }
    for (WorkSession o : open.keySet()) {
      if (o.registered() && !o.leaving()) {
        return o;
      }
    }
    return s;
  }

  /**
   * Whether the runtime routes work here now: registered on a live stream, the lease renewed within
   * a TTL, and not draining. Else why not, in one line ({@code /readyz}).
   */
  public Readiness readiness() {
    if (dispatcher.draining() || leaving) {
      return Readiness.notReady("draining for shutdown");
    }
    WorkSession s = serving();
    if (s == null || !s.registered()) {
      String last = lastEnd;
      return Readiness.notReady(
          "not registered with the runtime at "
              + options.target()
              + (last == null ? "" : " (last stream ended: " + last + ")"));
    }
    if (!s.leaseFresh()) {
      return Readiness.notReady(
          "lease not renewed: no heartbeat_ack for a lease TTL of "
              + s.heartbeat().ttl().toMillis()
              + " ms");
    }
    int runaway = dispatcher.runningApart();
    if (runaway > options.maxRunaway()) {
      return Readiness.notReady(
          runaway
              + " handlers still run after their call was cancelled or"
              + " timed out (they ignore interrupts; more than --max-runaway-handlers "
              + options.maxRunaway()
              + "): fix the plugin, restart the worker to end them");
    }
    Optional<String> disk = outbox.diskProblem();
    if (disk.isPresent()) {
      return Readiness.notReady(
          "the outbox cannot write its results to disk ("
              + disk.get()
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
