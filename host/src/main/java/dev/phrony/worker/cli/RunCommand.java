package dev.phrony.worker.cli;

import dev.phrony.worker.config.DurationParser;
import dev.phrony.worker.UserErrorException;
import dev.phrony.worker.config.HandlerOverrides;
import dev.phrony.worker.config.WorkerConfig;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.ops.LogSetup;
import dev.phrony.worker.ops.MicrometerMetrics;
import dev.phrony.worker.ops.OpsHttpServer;
import dev.phrony.worker.outbox.DurableOutbox;
import dev.phrony.worker.plugin.LoadResult;
import dev.phrony.worker.plugin.PluginLoader;
import dev.phrony.worker.plugin.PluginWatcher;
import dev.phrony.worker.reload.PluginReloader;
import dev.phrony.worker.time.ExecutorScheduler;
import dev.phrony.worker.state.StateDir;
import dev.phrony.worker.state.StateDirLockedException;
import dev.phrony.worker.state.StateDirRefusedException;
import dev.phrony.worker.work.WorkClient;
import dev.phrony.worker.work.WorkOptions;
import dev.phrony.worker.work.WorkerIdentity;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.time.InstantSource;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code phrony-worker run}: serve the runtime until SIGINT/SIGTERM. */
@Command(name = "run", mixinStandardHelpOptions = true,
    description = {
        "Connects to the runtime and serves every handler in the plugins folder.",
        "",
        "SIGINT/SIGTERM drain, bounded by --drain-timeout: the worker stops heartbeating, so "
            + "the runtime routes new calls elsewhere once its lease lapses, and serves what "
            + "still comes until then; then new calls are refused (nack draining), running ones "
            + "finish, the stream is closed and the process exits 0. A second signal exits at "
            + "once.",
        "",
        "The plugins folder is watched (--watch-plugins): a jar copied in, replaced or removed "
            + "is served live, with no call lost; SIGHUP and POST /plugins/reload reload too.",
        "",
        "Every option is also an environment variable (PHRONY_WORKER_<OPTION>, e.g. "
            + "PHRONY_WORKER_DRAIN_TIMEOUT; the reference names PHRONY_RUNTIME_ADDR, WORKER_ID, "
            + "WORKER_WORKLOAD_IDENTITY, WORKER_IMAGE_DIGEST) and a key of the config file "
            + "(drain-timeout: 45s). Flag > env > file > default; 'phrony-worker config' shows "
            + "the result."},
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
        "0:stopped cleanly after a signal",
        "1:usage error (bad flag, env or config value, missing plugins directory, "
            + "HTTP port in use)",
        "3:--strict and some plugins had problems, or no handler to serve; once serving:"
            + " out of memory (the JVM's status for -XX:+ExitOnOutOfMemoryError)",
        "8:a core thread died of an Error (the log names it); a restart is safe",
        "9:a plugin called System.exit (stderr names the caller)"})
final class RunCommand implements Callable<Integer> {
  private static final Logger log = LoggerFactory.getLogger(RunCommand.class);

  @Mixin
  private ConfigOption configOption;

  @Mixin
  private RunOptions options;

  @CommandLine.Spec
  private CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws InterruptedException, IOException {
    WorkerConfig config = WorkerSettings.resolveForRun(options, spec);
    // Before anything logs: the format and level are settings like any other.
    LogSetup.apply(config.logFormat(), config.logLevel());
    LoadResult loaded = new PluginLoader().load(config.plugins());
    loaded.problems().forEach(p -> log.warn("plugin {} not loaded: {}", p.plugin(), p.reason()));
    if (config.strict() && loaded.hasProblems()) {
      spec.commandLine().getErr().println("run: --strict: " + loaded.problems().size()
          + " plugin problem(s), not starting (see 'list-handlers')");
      return ExitCodes.PROBLEMS;
    }
    HandlerOverrides.Applied applied = HandlerOverrides.apply(config.handlers(),
        loaded.catalog());
    applied.warnings().forEach(log::warn);
    applied.effective().forEach((key, e) -> {
      if (e.overridden()) {
        log.info("handler {}: max-concurrency {} ({}), enabled {} ({}), deadline {} ({})", key,
            e.maxConcurrency(), e.maxConcurrencySource(), e.enabled(), e.enabledSource(),
            e.deadline().map(DurationParser::format).orElse("none"), e.deadlineSource());
      }
    });
    if (applied.served().size() == 0) {
      spec.commandLine().getErr().println("run: no handlers to serve in "
          + config.plugins() + (loaded.catalog().size() > 0 ? " (every one is disabled)" : "")
          + " (see 'list-handlers')");
      return ExitCodes.PROBLEMS;
    }
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (StateDir stateDir = openStateDir(config);
        DurableOutbox outbox = DurableOutbox.open(stateDir, new DurableOutbox.Options(
            config.durability(), config.orphanRetention(), InstantSource.system()));
        MicrometerMetrics metrics = new MicrometerMetrics(registry)) {
      WorkOptions workOptions = workOptions(config, loaded, stateDir)
          .withGeneration(stateDir.generation()).withLeaveRoutingOnDrain(true);
      WorkClient client = newClient(config, workOptions, applied.served(), outbox, metrics);
      metrics.bindRegistered(client::registered);
      metrics.bindOutbox(outbox);
      metrics.bindRunaway(client.dispatcher()::runningApart);
      metrics.bindPlugins(client::generation, client::streamsOpen);
      PluginReloader reloader = new PluginReloader(config.plugins(), config.strict(),
          config.handlers(), loaded, applied, client, stateDir::generation,
          o -> metrics.pluginReload(o.result().label()), InstantSource.system());
      try (reloader;
          OpsHttpServer http = startHttp(config, registry, client, reloader);
          ExecutorScheduler watchTimers = new ExecutorScheduler("phrony-plugin-watch-timer");
          PluginWatcher watcher = new PluginWatcher(config.plugins(), watchTimers,
              PluginWatcher.DEFAULT_SETTLE, PluginWatcher.DEFAULT_RESCAN,
              () -> reloader.reload("folder changed"))) {
        CountDownLatch stopped = new CountDownLatch(1);
        ShutdownSignals.install(() -> {
          try {
            reloader.close(); // no reload while the worker leaves (the watcher's end comes after)
            client.drain();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          } finally {
            stopped.countDown();
          }
        });
        log.info("worker {} serving {} handlers from {}; state in {} (durability {}); runtime {}"
            + " ({})", workOptions.identity().workerId(), applied.served().size(),
            config.plugins(), stateDir.path(), config.durability().flagName(), config.runtime(),
            config.transport().tls() ? "TLS" : "plaintext");
        if (http != null) {
          log.info("http endpoint on http://{}/ (/metrics, /healthz, /readyz)", hostPort(http));
        }
        client.start();
        if (config.watchPlugins()) {
          watcher.start();
        }
        ReloadSignal.install(() -> reloader.reload("SIGHUP"));
        outbox.pruneEvery(DurableOutbox.PRUNE_PERIOD); // on the outbox's timer, until it closes
        stopped.await();
      }
    } finally {
      registry.close();
    }
    return ExitCodes.OK;
  }

  private static String hostPort(OpsHttpServer http) {
    var a = http.address();
    String host = a.getAddress().getHostAddress();
    return (host.contains(":") ? "[" + host + "]" : host) + ":" + a.getPort();
  }

  private static OpsHttpServer startHttp(WorkerConfig config, PrometheusMeterRegistry registry,
      WorkClient client, PluginReloader reloader) throws IOException {
    if (config.http().isEmpty()) {
      return null;
    }
    var address = config.http().get();
    try {
      return OpsHttpServer.start(address.socketAddress(), registry::scrape, client::readiness,
          ReloadReport.routes(reloader));
    } catch (BindException e) {
      client.close();
      throw new UserErrorException(config.origin("http") + " " + address + ": cannot listen ("
          + e.getMessage() + "): choose another HOST:PORT, or turn the endpoint off with"
          + " --http none", e);
    }
  }

  private static WorkClient newClient(WorkerConfig config, WorkOptions workOptions,
      HandlerCatalog served, DurableOutbox outbox, MicrometerMetrics metrics) {
    try {
      return new WorkClient(workOptions, served, outbox, metrics);
    } catch (IllegalArgumentException | UncheckedIOException e) {
      String files = String.join(", ", config.origin("tls-ca"), config.origin("tls-cert"),
          config.origin("tls-key"));
      throw new UserErrorException("TLS settings (" + files + ") cannot be used: "
          + (e.getCause() != null ? e.getCause().getMessage() : e.getMessage()), e);
    }
  }

  private static StateDir openStateDir(WorkerConfig config) throws IOException {
    try {
      return StateDir.open(config.stateDir());
    } catch (StateDirLockedException e) {
      throw new UserErrorException(e.getMessage(), e);
    } catch (StateDirRefusedException e) {
      throw new UserErrorException(config.origin("state-dir") + ": " + e.getMessage(), e);
    }
  }

  private static WorkOptions workOptions(WorkerConfig config, LoadResult loaded,
      StateDir stateDir) {
    // The settings already hold $WORKER_ID and friends (flag > env > file): no env here.
    WorkerIdentity identity = WorkerIdentity.resolve(config.workerId(), Map.of(),
        () -> stateDir.workerId(WorkerIdentity::generateId), loaded.imageDigest());
    identity = new WorkerIdentity(identity.workerId(), config.workloadIdentity().orElse(""),
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
