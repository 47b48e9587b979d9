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
import io.grpc.ConnectivityState;
import io.netty.channel.EventLoop;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongUnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's connection to the runtime: the channel and its one I/O thread, the {@link
 * Dispatcher} that owns every call, and the {@link Registrations} that own every stream (reconnect,
 * reload, rescue after a kill). It wires them, opens the gRPC streams they ask for, and runs a
 * drain. The dispatcher and the outbox outlive every stream.
 */
public final class WorkClient implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(WorkClient.class);

  /** How long teardown waits for gRPC to close a stream it was asked to close. */
  private static final Duration CLOSE_WAIT = Duration.ofSeconds(5);

  /** The longest wait between tries while the runtime cannot be reached at all. */
  static final Duration UNREACHABLE_MAX_DELAY = Reconnects.UNREACHABLE_MAX_DELAY;

  /** How long after a lease has lapsed an old stream still waits for invokes in transit. */
  static final Duration LAPSE_MARGIN = Registrations.LAPSE_MARGIN;

  /**
   * A reload's hand-over to generation {@code number}: {@code registered} once a stream of it (or a
   * newer one) is registered, {@code retired} once no stream of an older one is open.
   */
  public record Handover(
      int number, CompletableFuture<Void> registered, CompletableFuture<Void> retired) {}

  private final WorkOptions options;
  private final Scheduler scheduler;
  private final ExecutorScheduler ownScheduler;
  private final WorkChannel channel;
  private final Dispatcher dispatcher;
  private final Registrations registrations;
  private final ResultOutbox outbox;
  private final WorkerMetrics metrics;
  private long streamIds; // in the dispatcher's context
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
    WireTimings timings = new WireTimings();
    try {
      this.channel = new WorkChannel(options, timings);
    } catch (RuntimeException e) {
      if (ownScheduler != null) {
        ownScheduler.close();
      }
      throw e;
    }
    EventLoop loop = channel.loop();
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
            loop,
            timings);
    dispatcher.maxRunaway(options.maxRunaway());
    this.registrations =
        new Registrations(
            options,
            dispatcher,
            new Registrations.Streams() {
              @Override
              public WorkSession create(HandlerSet handlers, WorkerIdentity identity) {
                return new WorkSession(
                    ++streamIds,
                    handlers,
                    dispatcher,
                    identity,
                    WorkClient.this.scheduler,
                    metrics,
                    channel.writes(),
                    loop);
              }

              @Override
              public void open(WorkSession s, Set<String> inFlight, WorkSession.HandOver first) {
                channel.open(s, inFlight, first);
              }

              @Override
              public void watch(WorkSession s) {
                channel.watch(s);
              }
            },
            this.scheduler,
            new Reconnects(
                new Backoff(options.backoffInitial(), options.backoffMax(), uniformBelow),
                options.target(),
                this.scheduler.clock()),
            metrics);
  }

  /** Opens the first stream and returns at once. */
  public synchronized void start() {
    if (started) {
      throw new IllegalStateException("already started");
    }
    started = true;
    registrations.start();
    dispatcher.runaways().start();
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
    return registrations.serve(next, number, imageDigest);
  }

  /** The generation served now. */
  public int generation() {
    return registrations.generation();
  }

  /** Completes once no call runs, or is still to run, code of {@code loaders}. */
  public CompletableFuture<Void> whenUnused(Set<ClassLoader> loaders) {
    return dispatcher.whenUnused(loaders);
  }

  /** The channel's connectivity now, without asking it to connect (tests). */
  ConnectivityState channelState() {
    return channel.state();
  }

  /** The streams open now (tests). */
  List<WorkSession> openStreams() {
    return registrations.openStreams();
  }

  /** Number of Work streams open now (two while a reload hands over or a rescue answers). */
  public int streamsOpen() {
    return registrations.openStreams().size();
  }

  // ---- drain and stop ----

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
    if (!awaitUntil(dispatcher.whenIdle(), deadline)) {
      int left = dispatcher.runningCount();
      if (left > 0) {
        log.warn("drain timeout: cancelling {} calls still running", left);
      }
      dispatcher.cancelAll();
    }
    registrations.stop();
    for (WorkSession s : registrations.openStreams()) {
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
    CompletableFuture<List<CompletableFuture<Void>>> leases = new CompletableFuture<>();
    dispatcher.execute(() -> leases.complete(registrations.leaveRouting()));
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
    awaitUntil(CompletableFuture.allOf(each.toArray(CompletableFuture[]::new)), deadline);
  }

  /** Waits for {@code f} until {@code deadline}, a timer of the scheduler; true if it completed. */
  private boolean awaitUntil(CompletableFuture<?> f, Instant deadline) throws InterruptedException {
    CompletableFuture<Void> timedOut = new CompletableFuture<>();
    Scheduler.Handle timer =
        scheduler.schedule(
            () -> timedOut.complete(null), Duration.between(scheduler.clock().instant(), deadline));
    try {
      CompletableFuture.anyOf(f, timedOut).get();
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    } finally {
      timer.cancel();
    }
    return f.isDone();
  }

  /** Stops at once: the stream is cancelled, running calls keep their held results. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    dispatcher.runaways().stop();
    registrations.stop();
    for (WorkSession s : registrations.openStreams()) {
      if (s.live()) {
        s.cut(ReconnectReason.ERROR, "worker stopping");
        await(s.ended(), CLOSE_WAIT);
      }
    }
    channel.close(CLOSE_WAIT);
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
    WorkSession s = registrations.serving();
    return s != null && s.registered();
  }

  /**
   * Whether the runtime routes work here now: registered on a live stream, the lease renewed within
   * a TTL, and not draining. Else why not, in one line ({@code /readyz}).
   */
  public Readiness readiness() {
    if (dispatcher.draining() || registrations.leaving()) {
      return Readiness.notReady("draining for shutdown");
    }
    WorkSession s = registrations.serving();
    if (s == null || !s.registered()) {
      String last = registrations.lastEnd();
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
    if (dispatcher.holdsRouting()) {
      return Readiness.notReady(
          "out of routing while runaway handlers hold the worker: "
              + dispatcher.runaways().why()
              + " (the WARN 'runaway handler' names each); back when they end");
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

  /** How many times the serving stream ended and another was opened. */
  public int reconnects() {
    return registrations.reconnects();
  }

  public Dispatcher dispatcher() {
    return dispatcher;
  }
}
