package dev.phrony.worker.testkit;

import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.worker.time.ExecutorScheduler;
import dev.phrony.worker.time.Scheduler;
import io.grpc.HandlerRegistry;
import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.netty.channel.ChannelOption;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An in-JVM Phrony runtime for the Work protocol, on a loopback port, that behaves as the real
 * runtime does (protocol.md part 2), quirks included: passive leases, stale registrations after an
 * error status, the close-ordering hazard, {@code nack} without {@code result_ack}, and so on.
 *
 * <pre>{@code
 * try (LocalRuntime runtime = LocalRuntime.builder().start()) {
 *     // point a worker at runtime.target(), then:
 *     Outcome outcome = runtime.dispatch(Call.of("weather.get-forecast", "1.0.0", "{\"city\":\"Oslo\"}"))
 *             .get(15, TimeUnit.SECONDS);
 * }
 * }</pre>
 *
 * <p>What it serves: {@code phrony.runtime.v1.Runtime/Work} and {@code /GetVersion}, and {@code
 * grpc.health.v1.Health/Check} for {@code ""} and {@code phrony.runtime.v1.Runtime}. It accepts
 * messages up to 4 MiB (a larger {@code result} fails the stream) and sends messages of any size.
 *
 * <p>What it keeps: a registry of workers (dropped by {@link #stop()}, {@link #restart()} and
 * {@link #crash()}), a completed-call ledger (kept across all of them, like the real durable
 * ledger), and a bounded {@linkplain #events() event log} of every message and stream end.
 *
 * <p>Time: leases are computed from the {@linkplain Builder#clock injected clock}, so a test can
 * expire one with a {@link ManualClock}. The queue wait, the execution bound and crossing mode's
 * delayed cancels run on the {@linkplain Builder#scheduler injected scheduler} (a fake one in
 * tests, so they fire when the test advances it), by default a timer thread of its own.
 *
 * <p>Threads: dispatch futures complete, and event listeners run, on runtime threads (gRPC callback
 * or timer threads). Do not block in them; use the {@code *Async} stages for slow work.
 */
public final class LocalRuntime implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(LocalRuntime.class);

  /** gRPC's default receive limit, which the runtime keeps. */
  public static final int DEFAULT_MAX_INBOUND_MESSAGE_SIZE = 4 * 1024 * 1024;

  /** The transport's own inbound limit, above the runtime's (see {@link #bind}). */
  private static final int TRANSPORT_MESSAGE_LIMIT = 64 * 1024 * 1024;

  /** How long a restart keeps retrying to bind the port the previous incarnation just released. */
  private static final Duration BIND_RETRY = Duration.ofSeconds(5);

  /** How long to wait for a forced shutdown to finish. */
  private static final Duration FORCED_STOP_WAIT = Duration.ofSeconds(5);

  private final RuntimeSettings settings;
  private final EventLog events;

  /** call_id to outcome for every call a worker completed; survives restarts. */
  private final ConcurrentMap<String, Outcome> ledger = new ConcurrentHashMap<>();

  private final AtomicLong streamIds = new AtomicLong();
  private final AtomicBoolean withholdResultAcks;
  private final AtomicBoolean loseHeartbeats = new AtomicBoolean();

  /**
   * Listens tried since this runtime was built, for the test that a busy first port is not retried.
   */
  private final java.util.concurrent.atomic.AtomicInteger bindAttempts =
      new java.util.concurrent.atomic.AtomicInteger();

  private final ExecutorService callbacks;
  private final Scheduler timers;

  /** The default timer thread, closed with the runtime; null when the builder gave a scheduler. */
  private final ExecutorScheduler ownTimers;

  private final Object lifecycle = new Object();
  // Guarded by lifecycle (written only under it; the volatiles are read without it, e.g. during a
  // stop).
  private Server server;
  private boolean closed;
  private volatile int port;
  private volatile boolean running;

  /**
   * Set once the first start has bound its port; only later starts wait for the port to come free.
   */
  private boolean boundBefore;

  /**
   * The current incarnation's registry (a shut-down one while stopped); read without the lifecycle
   * lock.
   */
  private volatile Registry registry;

  /** The session and approval RPCs ({@link Builder#sessions}). */
  private final RuntimeGrpc.AsyncService sessions;

  /** Methods no service serves ({@link Builder#unknownMethods}), or null: gRPC's own answer. */
  private final HandlerRegistry unknownMethods;

  private LocalRuntime(
      RuntimeSettings settings,
      boolean withholdResultAcks,
      Scheduler scheduler,
      RuntimeGrpc.AsyncService sessions,
      HandlerRegistry unknownMethods) {
    this.settings = settings;
    this.sessions = sessions;
    this.unknownMethods = unknownMethods;
    this.port = settings.port();
    this.events = new EventLog(settings.clock(), settings.eventLogCapacity());
    this.withholdResultAcks = new AtomicBoolean(withholdResultAcks);
    this.callbacks =
        Executors.newCachedThreadPool(
            Thread.ofPlatform().name("local-runtime-grpc-", 1).daemon().factory());
    // ExecutorScheduler drops a cancelled task at once: a re-armed call timeout must not
    // linger for the whole wait
    this.ownTimers = scheduler == null ? new ExecutorScheduler("local-runtime-timer") : null;
    this.timers = scheduler == null ? ownTimers : scheduler;
  }

  /**
   * A builder with the real runtime's defaults (30 s lease, 10 s queue wait, 256 waiting per key, 4
   * MiB inbound).
   */
  public static Builder builder() {
    return new Builder();
  }

  // ------------------------------------------------------------------ lifecycle

  /**
   * Starts serving: on the configured port the first time, on the same port as before after {@link
   * #stop()} or {@link #crash()}. The registry starts empty; the ledger is kept.
   *
   * @throws IllegalStateException if running or closed
   * @throws UncheckedIOException if the port cannot be bound (its cause is a {@link BindException}
   *     when the port is in use: at once on the first start, after retrying for a few seconds on a
   *     restart, while the previous listener lets go of it)
   */
  public void start() {
    synchronized (lifecycle) {
      if (closed) {
        throw new IllegalStateException("LocalRuntime is closed");
      }
      if (server != null) {
        throw new IllegalStateException("LocalRuntime is already running on " + target());
      }
      Registry fresh =
          new Registry(settings, ledger, timers, withholdResultAcks::get, loseHeartbeats::get);
      server = bind(port, fresh);
      boundBefore = true;
      port = server.getPort();
      registry = fresh;
      running = true;
      log.info(
          "LocalRuntime listening on {} lease_ttl={} queue_wait={} execution_timeout={} ledger_entries={}",
          target(),
          human(settings.leaseTtl()),
          human(settings.queueWait()),
          human(settings.executionTimeout()),
          ledger.size());
    }
  }

  /**
   * The runtime's graceful shutdown: the registry drops every worker (calls in flight become {@link
   * Outcome.Kind#INDETERMINATE}, waiting calls end {@link Outcome.Kind#SHUTDOWN}; no {@code cancel}
   * is sent), the server stops accepting streams, and streams still open after the {@linkplain
   * Builder#shutdownGrace grace period} are cut. Until then they stay up and talk to the emptied
   * registry (a heartbeat there ends the stream NOT_FOUND). No-op when not running.
   */
  public void stop() {
    synchronized (lifecycle) {
      if (server == null) {
        return;
      }
      log.info(
          "LocalRuntime stopping on {} (graceful, streams cut after {})",
          target(),
          human(settings.shutdownGrace()));
      running = false;
      registry.shutdown("runtime shutdown");
      server.shutdown();
      if (!awaitTermination(server, settings.shutdownGrace())) {
        log.info("LocalRuntime grace period over, cutting the remaining streams");
        server.shutdownNow();
        awaitTermination(server, FORCED_STOP_WAIT);
      }
      server = null;
      log.info("LocalRuntime stopped");
    }
  }

  /** {@link #stop()} then {@link #start()} on the same port; the ledger and event log are kept. */
  public void restart() {
    synchronized (lifecycle) {
      log.info("LocalRuntime restarting on {}", target());
      stop();
      start();
    }
  }

  /**
   * Dies abruptly: every stream and connection is cut at once, nothing more is sent. Pending
   * dispatch futures still complete (in flight: INDETERMINATE; waiting: SHUTDOWN) so callers do not
   * hang. The ledger is kept; {@link #start()} brings the runtime back on the same port.
   */
  public void crash() {
    synchronized (lifecycle) {
      if (server == null) {
        return;
      }
      log.info("LocalRuntime crashing on {} (simulated)", target());
      running = false;
      server.shutdownNow();
      registry.shutdown("runtime crashed");
      awaitTermination(server, FORCED_STOP_WAIT);
      server = null;
    }
  }

  /**
   * For teardown: cuts all streams at once (no grace period) and releases the runtime's threads.
   * Idempotent.
   */
  @Override
  public void close() {
    synchronized (lifecycle) {
      if (closed) {
        return;
      }
      closed = true;
      running = false;
      if (server != null) {
        registry.shutdown("runtime closed");
        server.shutdownNow();
        awaitTermination(server, FORCED_STOP_WAIT);
        server = null;
        log.info("LocalRuntime on {} closed", target());
      }
    }
    callbacks.shutdown();
    if (ownTimers != null) {
      ownTimers.close();
    }
  }

  /** Listens tried so far (a busy port retried after a restart counts each try). */
  int bindAttempts() {
    return bindAttempts.get();
  }

  /** True between {@link #start()} and {@link #stop()}, {@link #crash()} or {@link #close()}. */
  public boolean isRunning() {
    return running;
  }

  /** The bound port (kept while stopped, for the next start). */
  public int port() {
    return port;
  }

  /** {@code 127.0.0.1:port}: what a worker uses as {@code PHRONY_RUNTIME_ADDR}. */
  public String target() {
    return "127.0.0.1:" + port();
  }

  // ------------------------------------------------------------------ dispatch

  /**
   * Dispatches a call as the runtime does: answered from the ledger if that call id already
   * completed; attached to the same outcome if it is already in flight; otherwise leased to the
   * first worker (in registration order) with a live lease and a free slot for {@link Call#key()},
   * or queued for one.
   *
   * <p>The future always completes, never exceptionally: at the latest after the queue wait (if the
   * call is still waiting) or the execution timeout (if it is running; the worker then gets {@code
   * cancel}). Cancelling the future cancels the call the same way.
   */
  public CompletableFuture<Outcome> dispatch(Call call) {
    Objects.requireNonNull(call, "call");
    return registry.dispatch(call);
  }

  /** {@link #dispatch} and wait for the outcome (bounded by the runtime's own timeouts). */
  public Outcome dispatchAndWait(Call call) {
    return dispatch(call).join();
  }

  /**
   * Cancels a session's calls as the runtime does: each is forgotten first (its future completes
   * {@link Outcome.Kind#CANCELLED}), then the worker running it gets {@code cancel}. A result the
   * worker sends later is for an unknown call and ends its stream NOT_FOUND.
   */
  public void cancelSession(String sessionId) {
    registry.cancelSession(Objects.requireNonNull(sessionId, "sessionId"));
  }

  /**
   * Takes a registration out of routing at once and for good, as if its lease had lapsed and its
   * heartbeats were no longer heard (they are still answered): new calls skip it, calls it has
   * finish and its results are taken as usual, and {@link WorkerView#leaseExpired} says so. Not
   * something the real runtime offers a worker; for an embedder that knows a worker has handed over
   * to a newer registration (dev's plugin generations), so its old code gets no new call.
   *
   * @return false when no registration has {@code workerId}
   */
  public boolean retire(String workerId) {
    return registry.retire(Objects.requireNonNull(workerId, "workerId"));
  }

  // ------------------------------------------------------------------ views

  /** The registrations, in registration order (empty while stopped). */
  public List<WorkerView> workers() {
    return registry.workers();
  }

  /** One registration by worker id. */
  public Optional<WorkerView> worker(String workerId) {
    return workers().stream().filter(w -> w.workerId().equals(workerId)).findFirst();
  }

  /** Calls waiting for a slot, by {@code tool@version}; keys with no waiting call are absent. */
  public Map<String, Integer> queues() {
    return registry.queues();
  }

  /** Calls queued or leased right now. */
  public int inFlight() {
    return registry.inflightCount();
  }

  /** A copy of the completed-call ledger: call id to the outcome a worker gave it. */
  public Map<String, Outcome> ledger() {
    return Map.copyOf(ledger);
  }

  /**
   * The ledger's outcome for {@code callId}, if a worker completed it (result, error result or
   * nack).
   */
  public Optional<Outcome> completed(String callId) {
    return Optional.ofNullable(ledger.get(callId));
  }

  /**
   * Empties the ledger (the real one never forgets; for long benchmarks that would otherwise grow
   * it).
   */
  public void clearLedger() {
    ledger.clear();
  }

  // ------------------------------------------------------------------ knobs

  /**
   * While true, results are recorded in the ledger and complete their dispatch but get no {@code
   * result_ack}, nor does anything else that would be acked (a repeated result, an {@code
   * in_flight} entry at register). For crash tests of a worker's durable outbox.
   */
  public void withholdResultAcks(boolean withhold) {
    withholdResultAcks.set(withhold);
    log.info("LocalRuntime result_ack {}", withhold ? "withheld" : "sent");
  }

  /**
   * While true, every {@code heartbeat} is lost on its way in: the lease is not renewed and no
   * {@code heartbeat_ack} is sent, as when a network path fails one way. For tests of a worker's
   * watchdog.
   */
  public void loseHeartbeats(boolean lose) {
    loseHeartbeats.set(lose);
    log.info("LocalRuntime heartbeats {}", lose ? "lost" : "received");
  }

  /** The lease TTL sent in {@code registered}. */
  public Duration leaseTtl() {
    return settings.leaseTtl();
  }

  /** How long a call may wait for a slot. */
  public Duration queueWait() {
    return settings.queueWait();
  }

  /** The bound on a whole dispatch, after which a running call is cancelled. */
  public Duration executionTimeout() {
    return settings.executionTimeout();
  }

  // ------------------------------------------------------------------ events

  /** The retained events (the last {@link Builder#eventLogCapacity} of them), oldest first. */
  public List<Event> events() {
    return events.snapshot();
  }

  /**
   * The first event matching {@code condition}, looking first at the retained events and then
   * waiting for new ones up to {@code timeout}. To wait for something after a point, filter on
   * {@link Event#seq()}.
   *
   * @throws AssertionError if none arrives in time (its message lists the latest events)
   */
  public Event awaitEvent(Predicate<Event> condition, Duration timeout) {
    CompletableFuture<Event> hit = new CompletableFuture<>();
    // Subscribe before looking back, so an event recorded in between is seen one way or the other.
    Subscription subscription =
        events.subscribe(
            e -> {
              if (!hit.isDone() && condition.test(e)) {
                hit.complete(e);
              }
            });
    try {
      for (Event e : events.snapshot()) {
        if (condition.test(e)) {
          return e;
        }
      }
      return hit.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      throw new AssertionError(
          "no matching event within " + timeout + "; latest events:\n" + tail(20));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted while awaiting an event", e);
    } catch (ExecutionException e) {
      throw new AssertionError(e.getCause());
    } finally {
      subscription.close();
    }
  }

  /**
   * Calls {@code listener} for every later event, on the thread that records it (keep it quick;
   * exceptions are logged and ignored). Close the subscription to stop.
   */
  public Subscription onEvent(Consumer<Event> listener) {
    return events.subscribe(Objects.requireNonNull(listener, "listener"));
  }

  /** Stops an {@link #onEvent} listener. */
  @FunctionalInterface
  public interface Subscription extends AutoCloseable {
    @Override
    void close();
  }

  @Override
  public String toString() {
    return "LocalRuntime[" + target() + (isRunning() ? " running" : " stopped") + "]";
  }

  // ------------------------------------------------------------------ internals

  private Server bind(int wantedPort, Registry fresh) {
    InetSocketAddress address = new InetSocketAddress(loopback(), wantedPort);
    // Real time on purpose: a restart waits for the kernel to let go of the port, which no
    // injected clock can speed up.
    long deadline = System.nanoTime() + BIND_RETRY.toNanos();
    while (true) {
      bindAttempts.incrementAndGet();
      NettyServerBuilder builder = settings.security().serverBuilder(address);
      if (unknownMethods != null) {
        builder.fallbackHandlerRegistry(unknownMethods);
      }
      Server candidate =
          builder
              .withOption(ChannelOption.SO_REUSEADDR, true)
              .executor(callbacks)
              // The Work stream enforces the configured limit itself, to end the stream with
              // grpc-go's
              // RESOURCE_EXHAUSTED status (grpc-java's transport would just reset it); this is a
              // backstop.
              .maxInboundMessageSize(
                  Math.max(settings.maxInboundMessageSize(), TRANSPORT_MESSAGE_LIMIT))
              // grpc-go's default enforcement: a client ping at most every 5 minutes, none without
              // a call.
              .permitKeepAliveTime(5, TimeUnit.MINUTES)
              .permitKeepAliveWithoutCalls(false)
              .addService(
                  settings
                      .security()
                      .protect(new RuntimeService(fresh, events, streamIds, settings, sessions)))
              .addService(new HealthService())
              .build();
      try {
        return candidate.start();
      } catch (IOException e) {
        candidate.shutdownNow();
        boolean portBusy = portBusy(e);
        // After a restart the old listener may need a moment to let go of the port; on the first
        // start a busy port belongs to someone else, so that fails at once.
        if (wantedPort == 0 || !portBusy || !boundBefore || System.nanoTime() > deadline) {
          throw new UncheckedIOException(
              "LocalRuntime could not listen on " + address,
              portBusy && !(e instanceof BindException) ? busy(e, address) : e);
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
      }
    }
  }

  /**
   * True when {@code e} says the port is taken: a {@link BindException} from NIO, or the native
   * transport's own error (Netty's epoll reports EADDRINUSE as an IOException of its own).
   */
  private static boolean portBusy(Throwable e) {
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (c instanceof BindException
          || (c.getMessage() != null && c.getMessage().contains("Address already in use"))) {
        return true;
      }
    }
    return false;
  }

  /** The busy-port error as the {@link BindException} callers look for, the original its cause. */
  private static BindException busy(IOException e, InetSocketAddress address) {
    BindException b = new BindException("address already in use: " + address);
    b.initCause(e);
    return b;
  }

  private static InetAddress loopback() {
    try {
      return InetAddress.getByName("127.0.0.1");
    } catch (UnknownHostException e) {
      throw new IllegalStateException(e);
    }
  }

  private static boolean awaitTermination(Server server, Duration bound) {
    try {
      return server.awaitTermination(bound.toNanos(), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      server.shutdownNow();
      return false;
    }
  }

  private String tail(int n) {
    List<Event> all = events.snapshot();
    return all.subList(Math.max(0, all.size() - n), all.size()).stream()
        .map(Event::toString)
        .collect(Collectors.joining("\n  ", "  ", ""));
  }

  private static String human(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + "s" : d.toMillis() + "ms";
  }

  /**
   * Configures a {@link LocalRuntime}. Defaults are the real runtime's: an ephemeral loopback port
   * (0), 30 s lease, 10 s queue wait, execution bound equal to the queue wait, 256 waiting calls
   * per key, 4 MiB inbound messages, 5 s shutdown grace, system clock; event log of 100 000 events.
   */
  public static final class Builder {
    private int port;
    private Duration leaseTtl = Duration.ofSeconds(30);
    private Duration queueWait = Duration.ofSeconds(10);
    private Duration executionTimeout;
    private int maxQueuePerKey = 256;
    private InstantSource clock;
    private Scheduler scheduler;
    private Duration shutdownGrace = Duration.ofSeconds(5);
    private int eventLogCapacity = 100_000;
    private int maxInboundMessageSize = DEFAULT_MAX_INBOUND_MESSAGE_SIZE;
    private String version = "0.2.0-local";
    private String schemaVersion = "";
    private boolean withholdResultAcks;
    private Duration cancelDelay = Duration.ZERO;
    private Path tlsCertChain;
    private Path tlsPrivateKey;
    private Path clientCa;
    private String bearerToken;
    private RuntimeGrpc.AsyncService sessions = new RuntimeGrpc.AsyncService() {};
    private HandlerRegistry unknownMethods;

    private Builder() {}

    /**
     * Serves the runtime's session and approval RPCs ({@code RunSessionInteractive}, {@code
     * CancelSession}, {@code GetApproval}, {@code ListApprovals}, {@code DecideApproval}) on the
     * runtime's address with {@code service}, as the real runtime serves them beside {@code Work}.
     * Without one they answer UNIMPLEMENTED.
     */
    public Builder sessions(RuntimeGrpc.AsyncService service) {
      this.sessions = Objects.requireNonNull(service, "service");
      return this;
    }

    /** Answers calls of methods no service of this runtime has (e.g. the runtime's other RPCs). */
    public Builder unknownMethods(HandlerRegistry registry) {
      this.unknownMethods = Objects.requireNonNull(registry, "registry");
      return this;
    }

    /**
     * Serves TLS with this PEM certificate chain and PEM (PKCS#8) private key, as a TLS-terminating
     * proxy in front of the runtime would; {@link LocalRuntime#target()} stays {@code
     * 127.0.0.1:port}, so the certificate must name that address. Plaintext by default, like the
     * runtime itself.
     */
    public Builder tls(Path certChain, Path privateKey) {
      this.tlsCertChain = Objects.requireNonNull(certChain, "certChain");
      this.tlsPrivateKey = Objects.requireNonNull(privateKey, "privateKey");
      return this;
    }

    /** Requires a client certificate issued by this PEM CA (mutual TLS); needs {@link #tls}. */
    public Builder clientCa(Path caCertificate) {
      this.clientCa = Objects.requireNonNull(caCertificate, "caCertificate");
      return this;
    }

    /**
     * Requires {@code authorization: Bearer <token>} on every Work stream; a stream without it (or
     * with another token) ends UNAUTHENTICATED before it reaches the runtime, as behind an
     * authenticating proxy.
     */
    public Builder requireBearerToken(String token) {
      this.bearerToken = Objects.requireNonNull(token, "token");
      return this;
    }

    /**
     * Loopback port to listen on; 0 (the default) picks a free one, see {@link
     * LocalRuntime#port()}.
     */
    public Builder port(int port) {
      this.port = port;
      return this;
    }

    /** Lease TTL sent in {@code registered} and renewed by each heartbeat. */
    public Builder leaseTtl(Duration leaseTtl) {
      this.leaseTtl = leaseTtl;
      return this;
    }

    /** How long a call waits for a slot before it ends "capacity exhausted" / "no handler". */
    public Builder queueWait(Duration queueWait) {
      this.queueWait = queueWait;
      return this;
    }

    /**
     * The bound on a whole dispatch, waiting plus running, counted from {@link
     * LocalRuntime#dispatch} (the real runtime uses its queue wait for this, which is the default);
     * when it passes with the call running, the runtime forgets it and sends {@code cancel}.
     */
    public Builder executionTimeout(Duration executionTimeout) {
      this.executionTimeout = executionTimeout;
      return this;
    }

    /** Calls allowed to wait per {@code tool@version}; the next one is refused at once. */
    public Builder maxQueuePerKey(int maxQueuePerKey) {
      this.maxQueuePerKey = maxQueuePerKey;
      return this;
    }

    /** The clock for leases and event times (a {@link ManualClock} in tests). */
    public Builder clock(InstantSource clock) {
      this.clock = clock;
      return this;
    }

    /** How long {@link LocalRuntime#stop()} waits for streams to end before cutting them. */
    public Builder shutdownGrace(Duration shutdownGrace) {
      this.shutdownGrace = shutdownGrace;
      return this;
    }

    /** How many of the latest events {@link LocalRuntime#events()} keeps. */
    public Builder eventLogCapacity(int eventLogCapacity) {
      this.eventLogCapacity = eventLogCapacity;
      return this;
    }

    /** Largest client message accepted; the runtime's is gRPC's default 4 MiB. */
    public Builder maxInboundMessageSize(int bytes) {
      this.maxInboundMessageSize = bytes;
      return this;
    }

    /** What {@code GetVersion} answers. */
    public Builder version(String version, String schemaVersion) {
      this.version = version;
      this.schemaVersion = schemaVersion;
      return this;
    }

    /**
     * Crossing mode: a cancelled call is forgotten at once, as the real runtime forgets it, but its
     * {@code cancel} (and whatever the stream sends after it) reaches the worker {@code delay}
     * later, as the real runtime's does after its ledger write and the trip over the wire. A result
     * the worker sends meanwhile is for a call the runtime no longer knows: the stream ends {@code
     * NOT_FOUND}, as it does against the real runtime. Zero (the default) sends the cancel at once.
     */
    public Builder cancelDelay(Duration delay) {
      this.cancelDelay = delay;
      return this;
    }

    /** Starts with result acks withheld, see {@link LocalRuntime#withholdResultAcks(boolean)}. */
    public Builder withholdResultAcks(boolean withhold) {
      this.withholdResultAcks = withhold;
      return this;
    }

    /**
     * The scheduler the queue wait, the execution bound and delayed cancels run on; its clock is
     * also the runtime's unless {@link #clock} sets another. Not closed by the runtime. Default: a
     * timer thread of the runtime's own, on the system clock.
     */
    public Builder scheduler(Scheduler scheduler) {
      this.scheduler = scheduler;
      return this;
    }

    /** Builds and starts the runtime. */
    public LocalRuntime start() {
      LocalRuntime runtime = build();
      try {
        runtime.start();
      } catch (RuntimeException e) {
        runtime.close();
        throw e;
      }
      return runtime;
    }

    /** Builds the runtime without starting it. */
    LocalRuntime build() {
      RuntimeSettings settings =
          new RuntimeSettings(
              port,
              leaseTtl,
              queueWait,
              executionTimeout == null ? queueWait : executionTimeout,
              maxQueuePerKey,
              clock != null
                  ? clock
                  : scheduler != null ? scheduler.clock() : InstantSource.system(),
              shutdownGrace,
              eventLogCapacity,
              maxInboundMessageSize,
              version,
              schemaVersion,
              new ServerSecurity(tlsCertChain, tlsPrivateKey, clientCa, bearerToken),
              cancelDelay);
      return new LocalRuntime(settings, withholdResultAcks, scheduler, sessions, unknownMethods);
    }
  }
}
