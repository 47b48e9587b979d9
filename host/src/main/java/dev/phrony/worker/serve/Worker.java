package dev.phrony.worker.serve;

import dev.phrony.worker.Count;
import dev.phrony.worker.UserErrorException;
import dev.phrony.worker.config.WorkerConfig;
import dev.phrony.worker.ops.MicrometerMetrics;
import dev.phrony.worker.ops.OpsHttpServer;
import dev.phrony.worker.ops.Readiness;
import dev.phrony.worker.outbox.DiskErrors;
import dev.phrony.worker.outbox.DurableOutbox;
import dev.phrony.worker.reload.Generations;
import dev.phrony.worker.reload.LiveReload;
import dev.phrony.worker.reload.NotStartingException;
import dev.phrony.worker.reload.PluginReloader;
import dev.phrony.worker.reload.WorkerPlugins;
import dev.phrony.worker.state.StateDir;
import dev.phrony.worker.state.StateDirLockedException;
import dev.phrony.worker.state.StateDirRefusedException;
import dev.phrony.worker.warmup.WarmUp;
import dev.phrony.worker.work.WorkClient;
import dev.phrony.worker.work.WorkOptions;
import dev.phrony.worker.work.WorkerIdentity;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker {@code run} serves, assembled from its {@link WorkerConfig}: the plugins loaded with
 * the operator's handler settings, the state dir locked, the outbox on it, metrics, the {@link
 * WorkClient}, the HTTP endpoint, and the plugins folder served live. The command only parses,
 * wires the process's signals and maps the outcome to an exit status:
 *
 * <pre>{@code
 * try (Worker worker = Worker.open(config, routes)) { // nothing runs yet; refusals throw here
 *   signals.onStop(worker::drain);
 *   worker.start();                                   // connect, watch the folder, prune
 *   ...                                               // until drained
 * }
 * }</pre>
 */
public final class Worker implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Worker.class);

  private final WorkerConfig config;
  private final InetSocketAddress warmUpAt; // where the warm-up's runtime listens

  /** What was opened, the latest first: closed in that order. */
  private final Deque<AutoCloseable> opened = new ArrayDeque<>();

  private WorkerPlugins plugins;
  private WorkerIdentity identity;
  private StateDir stateDir;
  private DurableOutbox outbox;
  private WorkClient client;
  private LiveReload live;
  private OpsHttpServer http;
  private WorkOptions workOptions;
  private WarmUp warmUp; // while start() warms the call path
  private boolean stopping;
  private WarmUp.Result warmedUp; // tests

  private Worker(WorkerConfig config, InetSocketAddress warmUpAt) {
    this.config = config;
    this.warmUpAt = warmUpAt;
  }

  /**
   * Loads the plugins and opens everything the worker serves with; nothing connects, watches or
   * listens for calls before {@link #start} (the HTTP endpoint answers at once: it is not ready).
   *
   * @param pluginRoutes the HTTP endpoint's plugin routes over the worker's reloader
   * @throws NotStartingException {@code --strict} and a plugin problem, or nothing to serve
   * @throws UserErrorException a setting that cannot be used (the state dir, TLS files, the HTTP
   *     address), the message naming where it was set
   */
  public static Worker open(
      WorkerConfig config, Function<PluginReloader, OpsHttpServer.Plugins> pluginRoutes)
      throws IOException, NotStartingException {
    return open(config, pluginRoutes, WarmUp.LOOPBACK);
  }

  /** The same, with the warm-up's runtime listening on {@code warmUpAt} (tests: a taken port). */
  static Worker open(
      WorkerConfig config,
      Function<PluginReloader, OpsHttpServer.Plugins> pluginRoutes,
      InetSocketAddress warmUpAt)
      throws IOException, NotStartingException {
    WorkerPlugins plugins =
        WorkerPlugins.load(config.plugins(), config.strict(), config.handlers());
    if (plugins.applied().served().size() == 0) {
      throw new NotStartingException(
          "no handlers to serve in "
              + config.plugins()
              + (plugins.loaded().catalog().size() > 0 ? " (every one is disabled)" : "")
              + " (see 'list-handlers')");
    }
    Worker worker = new Worker(config, warmUpAt);
    try {
      worker.assemble(plugins, pluginRoutes);
      return worker;
    } catch (IOException | RuntimeException e) {
      worker.close();
      throw e;
    }
  }

  private void assemble(
      WorkerPlugins plugins, Function<PluginReloader, OpsHttpServer.Plugins> pluginRoutes)
      throws IOException {
    this.plugins = plugins;
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    opened.push(registry::close);
    stateDir = keep(openStateDir());
    outbox = keep(openOutbox());
    MicrometerMetrics metrics = keep(new MicrometerMetrics(registry));
    workOptions = workOptions().withGeneration(stateDir.generation()).withLeaveRoutingOnDrain(true);
    identity = workOptions.identity();
    client = keep(newClient(workOptions, metrics));
    metrics.bindRegistered(client::registered);
    metrics.bindOutbox(outbox);
    metrics.bindRunaway(client.dispatcher()::runningApart);
    metrics.bindPlugins(client::generation, client::streamsOpen);
    live =
        keep(
            new LiveReload(
                config.plugins(),
                timers ->
                    new PluginReloader(
                        config.plugins(),
                        config.strict(),
                        config.handlers(),
                        plugins.loaded(),
                        plugins.applied(),
                        Generations.of(client),
                        stateDir::generation,
                        o -> metrics.pluginReload(o.result().label()),
                        false,
                        config.maxLeakedLoaders(),
                        timers)));
    live.reloader().onLeakedLoader(metrics::leakedLoaders);
    http = startHttp(registry, pluginRoutes.apply(live.reloader()));
    if (http != null) {
      keep(http);
    }
  }

  private <T extends AutoCloseable> T keep(T resource) {
    opened.push(resource);
    return resource;
  }

  /**
   * Serves: warms the call path ({@code --warm-up}), then connects to the runtime, watches the
   * plugins folder (when the settings say so) and prunes the outbox on its timer, until {@link
   * #drain} or {@link #close}. Returns once the warm-up is over (a drain ends it).
   */
  public void start() {
    log.info(
        "worker {} serving {} from {}; state in {} (durability {}); runtime {} ({})",
        identity.workerId(),
        Count.of(plugins.applied().served().size(), "handler"),
        config.plugins(),
        stateDir.path(),
        config.durability().flagName(),
        config.runtime(),
        config.transport().tls() ? "TLS" : "plaintext");
    if (http != null) {
      log.info("http endpoint on http://{}/ (/metrics, /healthz, /readyz)", hostPort(http));
    }
    warmUp();
    synchronized (this) {
      if (stopping) {
        return; // a signal came during the warm-up: the drain has closed the client
      }
      client.start();
    }
    if (config.watchPlugins()) {
      live.watch();
    }
    outbox.pruneEvery(DurableOutbox.PRUNE_PERIOD); // on the outbox's timer, until it closes
  }

  /**
   * Before the first register: the runtime sends a new worker its full share of calls at once, and
   * a cold JVM serves them at a fraction of its speed while the JIT compiles on the same cores.
   */
  private void warmUp() {
    if (config.warmUp().off()) {
      return;
    }
    WarmUp w;
    synchronized (this) {
      if (stopping) {
        return;
      }
      w =
          warmUp =
              new WarmUp(config.warmUp(), workOptions, outboxOptions(), stateDir.path(), warmUpAt);
    }
    WarmUp.Result r = w.run();
    synchronized (this) {
      warmUp = null;
      warmedUp = r;
    }
  }

  /** What {@link #start}'s warm-up did, if it ran (tests). */
  synchronized Optional<WarmUp.Result> warmedUp() {
    return Optional.ofNullable(warmedUp);
  }

  /** Reloads the plugins folder now (SIGHUP); {@code trigger} names what asked, for the log. */
  public void reload(String trigger) {
    live.reload(trigger);
  }

  /**
   * Leaves gracefully, as {@link WorkClient#drain} says; no reload is served from now on. Blocks
   * until the stream is closed.
   */
  public void drain() throws InterruptedException {
    synchronized (this) {
      stopping = true;
      if (warmUp != null) {
        warmUp.stop();
      }
    }
    live.refuse(); // no reload while the worker leaves (the watcher's end comes with close)
    client.drain();
  }

  /** Closes everything, the latest opened first; after a drain, the client is closed already. */
  @Override
  public void close() {
    RuntimeException failed = null;
    for (AutoCloseable c; (c = opened.poll()) != null; ) {
      try {
        c.close();
      } catch (Exception e) {
        if (failed == null) {
          failed = e instanceof RuntimeException r ? r : new IllegalStateException(e);
        } else {
          failed.addSuppressed(e);
        }
      }
    }
    if (failed != null) {
      throw failed;
    }
  }

  private static String hostPort(OpsHttpServer http) {
    var a = http.address();
    String host = a.getAddress().getHostAddress();
    return (host.contains(":") ? "[" + host + "]" : host) + ":" + a.getPort();
  }

  private OpsHttpServer startHttp(PrometheusMeterRegistry registry, OpsHttpServer.Plugins routes)
      throws IOException {
    if (config.http().isEmpty()) {
      return null;
    }
    var address = config.http().get();
    try {
      return OpsHttpServer.start(
          address.socketAddress(), registry::scrape, this::readiness, routes);
    } catch (BindException e) {
      throw new UserErrorException(
          config.origin("http")
              + " "
              + address
              + ": cannot listen ("
              + e.getMessage()
              + "): choose another HOST:PORT, or turn the endpoint off with"
              + " --http none",
          e);
    }
  }

  /** The client's readiness, and then the room on the outbox's disk. */
  private Readiness readiness() {
    Readiness r = client.readiness();
    if (!r.ready()) {
      return r;
    }
    return outbox.room().problem().map(Readiness::notReady).orElse(r);
  }

  private WorkClient newClient(WorkOptions workOptions, MicrometerMetrics metrics) {
    try {
      return new WorkClient(workOptions, plugins.applied().served(), outbox, metrics);
    } catch (IllegalArgumentException | UncheckedIOException e) {
      String files =
          String.join(
              ", ", config.origin("tls-ca"), config.origin("tls-cert"), config.origin("tls-key"));
      throw new UserErrorException(
          "TLS settings ("
              + files
              + ") cannot be used: "
              + (e.getCause() != null ? e.getCause().getMessage() : e.getMessage()),
          e);
    }
  }

  private StateDir openStateDir() throws IOException {
    try {
      return StateDir.open(config.stateDir());
    } catch (StateDirLockedException e) {
      throw new UserErrorException(e.getMessage(), e);
    } catch (StateDirRefusedException e) {
      throw new UserErrorException(config.origin("state-dir") + ": " + e.getMessage(), e);
    } catch (IOException e) {
      throw unwritable(e);
    }
  }

  private DurableOutbox openOutbox() {
    try {
      return DurableOutbox.open(stateDir, outboxOptions());
    } catch (IOException e) {
      throw unwritable(e);
    }
  }

  private DurableOutbox.Options outboxOptions() {
    return new DurableOutbox.Options(
        config.durability(), config.orphanRetention(), InstantSource.system());
  }

  /** A state dir the worker cannot write (a full disk, a read-only mount), named with its fix. */
  private UserErrorException unwritable(IOException e) {
    return new UserErrorException(
        config.origin("state-dir")
            + " "
            + config.stateDir()
            + ": cannot write to it ("
            + DiskErrors.reason(e)
            + "): free space on its disk, or choose another state dir with --state-dir",
        e);
  }

  private WorkOptions workOptions() {
    // The settings already hold $WORKER_ID and friends (flag > env > file): no env here.
    WorkerIdentity identity =
        WorkerIdentity.resolve(
            config.workerId(),
            Map.of(),
            () -> stateDir.workerId(WorkerIdentity::generateId),
            plugins.loaded().imageDigest());
    identity =
        new WorkerIdentity(
            identity.workerId(),
            config.workloadIdentity().orElse(""),
            config.imageDigest().orElse(identity.imageDigest()));
    return WorkOptions.defaults(config.runtime(), identity)
        .withDrainTimeout(config.drainTimeout())
        .withKeepAlive(config.keepalive())
        .withMaxResultBytes(config.maxResultSize())
        .withMaxInboundBytes(config.maxInboundSize())
        .withExposeInternalErrors(config.exposeInternalErrors())
        .withMaxRunaway(config.maxRunawayHandlers())
        .withTransport(config.transport());
  }
}
