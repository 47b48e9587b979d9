package dev.phrony.worker.testkit;

import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.worker.time.ExecutorScheduler;
import dev.phrony.worker.time.Scheduler;
import io.grpc.HandlerRegistry;
import java.io.UncheckedIOException;
import java.net.BindException;
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
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Predicate;
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

  private final RuntimeSettings settings;
  private final EventLog events;

  /** call_id to outcome for every call a worker completed; survives restarts. */
  private final ConcurrentMap<String, Outcome> ledger = new ConcurrentHashMap<>();

  private final AtomicBoolean withholdResultAcks;
  private final AtomicBoolean loseHeartbeats = new AtomicBoolean();

  private final ExecutorService callbacks;
  private final RuntimeServer server;
  private final Scheduler timers;

  /** The default timer thread, closed with the runtime; null when the builder gave a scheduler. */
  private final ExecutorScheduler ownTimers;

  private LocalRuntime(
      RuntimeSettings settings,
      boolean withholdResultAcks,
      Scheduler scheduler,
      RuntimeGrpc.AsyncService sessions,
      HandlerRegistry unknownMethods) {
    this.settings = settings;
    this.events = new EventLog(settings.clock(), settings.eventLogCapacity());
    this.withholdResultAcks = new AtomicBoolean(withholdResultAcks);
    this.callbacks =
        Executors.newCachedThreadPool(
            Thread.ofPlatform().name("local-runtime-grpc-", 1).daemon().factory());
    // ExecutorScheduler drops a cancelled task at once: a re-armed call timeout must not
    // linger for the whole wait
    this.ownTimers = scheduler == null ? new ExecutorScheduler("local-runtime-timer") : null;
    this.timers = scheduler == null ? ownTimers : scheduler;
    this.server =
        new RuntimeServer(
            settings,
            events,
            callbacks,
            () ->
                new Registry(
                    settings, ledger, timers, this.withholdResultAcks::get, loseHeartbeats::get),
            ledger::size,
            sessions,
            unknownMethods);
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
    server.start();
  }

  /**
   * The runtime's graceful shutdown: the registry drops every worker (calls in flight become {@link
   * Outcome.Kind#INDETERMINATE}, waiting calls end {@link Outcome.Kind#SHUTDOWN}; no {@code cancel}
   * is sent), the server stops accepting streams, and streams still open after the {@linkplain
   * Builder#shutdownGrace grace period} are cut. Until then they stay up and talk to the emptied
   * registry (a heartbeat there ends the stream NOT_FOUND). No-op when not running.
   */
  public void stop() {
    server.stop();
  }

  /** {@link #stop()} then {@link #start()} on the same port; the ledger and event log are kept. */
  public void restart() {
    server.restart();
  }

  /**
   * Dies abruptly: every stream and connection is cut at once, nothing more is sent. Pending
   * dispatch futures still complete (in flight: INDETERMINATE; waiting: SHUTDOWN) so callers do not
   * hang. The ledger is kept; {@link #start()} brings the runtime back on the same port.
   */
  public void crash() {
    server.crash();
  }

  /**
   * For teardown: cuts all streams at once (no grace period) and releases the runtime's threads.
   * Idempotent.
   */
  @Override
  public void close() {
    if (!server.close()) {
      return;
    }
    callbacks.shutdown();
    if (ownTimers != null) {
      ownTimers.close();
    }
  }

  /** Listens tried so far (a busy port retried after a restart counts each try). */
  int bindAttempts() {
    return server.attempts();
  }

  /** True between {@link #start()} and {@link #stop()}, {@link #crash()} or {@link #close()}. */
  public boolean isRunning() {
    return server.running();
  }

  /** The bound port (kept while stopped, for the next start). */
  public int port() {
    return server.port();
  }

  /** {@code 127.0.0.1:port}: what a worker uses as {@code PHRONY_RUNTIME_ADDR}. */
  public String target() {
    return server.target();
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
    return server.registry().dispatch(call);
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
    server.registry().cancelSession(Objects.requireNonNull(sessionId, "sessionId"));
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
    return server.registry().retire(Objects.requireNonNull(workerId, "workerId"));
  }

  // ------------------------------------------------------------------ views

  /** The registrations, in registration order (empty while stopped). */
  public List<WorkerView> workers() {
    return server.registry().workers();
  }

  /** One registration by worker id. */
  public Optional<WorkerView> worker(String workerId) {
    return workers().stream().filter(w -> w.workerId().equals(workerId)).findFirst();
  }

  /** Calls waiting for a slot, by {@code tool@version}; keys with no waiting call are absent. */
  public Map<String, Integer> queues() {
    return server.registry().queues();
  }

  /** Calls queued or leased right now. */
  public int inFlight() {
    return server.registry().inflightCount();
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
    return events.await(condition, timeout);
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
