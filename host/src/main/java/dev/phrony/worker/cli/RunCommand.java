package dev.phrony.worker.cli;

import dev.phrony.worker.UserErrorException;
import dev.phrony.worker.outbox.DurableOutbox;
import dev.phrony.worker.outbox.Durability;
import dev.phrony.worker.plugin.LoadResult;
import dev.phrony.worker.plugin.PluginLoader;
import dev.phrony.worker.work.WorkClient;
import dev.phrony.worker.work.WorkOptions;
import dev.phrony.worker.state.StateDir;
import dev.phrony.worker.state.StateDirLockedException;
import dev.phrony.worker.work.WorkerIdentity;
import java.io.IOException;
import java.time.Instant;
import java.time.InstantSource;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code phrony-worker run}: serve the runtime until SIGINT/SIGTERM. */
@Command(name = "run", mixinStandardHelpOptions = true,
    description = {
        "Connects to the runtime and serves every handler in the plugins folder.",
        "",
        "SIGINT/SIGTERM drain: new calls are refused (nack draining), running calls finish "
            + "for up to --drain-timeout, then the stream is closed and the process exits 0. "
            + "A second signal exits at once."},
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
        "0:stopped cleanly after a signal",
        "1:usage error (bad flag or value, missing plugins directory)",
        "3:--strict and some plugins had problems, or no handler to serve"})
final class RunCommand implements Callable<Integer> {
  private static final Logger log = LoggerFactory.getLogger(RunCommand.class);
  static final String ENV_RUNTIME_ADDR = "PHRONY_RUNTIME_ADDR";
  static final String DEFAULT_RUNTIME_ADDR = "127.0.0.1:7777";

  @Mixin
  private PluginsOption plugins;

  @Mixin
  private StateDirOption stateDirOption;

  @Option(names = "--durability", paramLabel = "writes|all|none", defaultValue = "writes",
      converter = DurabilityConverter.class,
      completionCandidates = DurabilityConverter.Candidates.class,
      description = "Which results are on disk before they are sent: writes (calls of "
          + "write and irreversible classes; default), all, or none (memory only).")
  private Durability durability;

  @Option(names = "--orphan-retention", paramLabel = "DURATION", defaultValue = "7d",
      converter = DurationParser.class,
      description = "How long orphaned and interrupted records are kept for an operator "
          + "(default: 7d).")
  private Duration orphanRetention;

  @Option(names = "--runtime", paramLabel = "HOST:PORT",
      description = "Runtime address. Default: $" + ENV_RUNTIME_ADDR + ", else "
          + DEFAULT_RUNTIME_ADDR + ".")
  private String runtime;

  @Option(names = "--worker-id", paramLabel = "ID",
      description = "Worker id. Default: $WORKER_ID, else <hostname>-<8 hex> fixed for the "
          + "life of the process.")
  private String workerId;

  @Option(names = "--workload-identity", paramLabel = "ID",
      description = "Workload identity. Default: $WORKER_WORKLOAD_IDENTITY.")
  private String workloadIdentity;

  @Option(names = "--image-digest", paramLabel = "DIGEST",
      description = "Image digest. Default: $WORKER_IMAGE_DIGEST, else sha256 of the host "
          + "version and the plugin jars (see list-handlers).")
  private String imageDigest;

  @Option(names = "--drain-timeout", paramLabel = "DURATION", defaultValue = "30s",
      converter = DurationParser.class, description = "How long a shutdown waits for running calls (default: 30 s).")
  private Duration drainTimeout;

  @Option(names = "--max-result-size", paramLabel = "BYTES",
      description = "Largest result payload; larger ones become result_too_large errors. "
          + "Default and maximum: 4 MiB minus 16 KiB (the runtime rejects messages over 4 MiB).")
  private Integer maxResultBytes;

  @Option(names = "--max-inbound-size", paramLabel = "BYTES",
      description = "Largest invoke accepted (default 64 MiB; at least 4 MiB).")
  private Integer maxInboundBytes;

  @Option(names = "--keepalive", paramLabel = "DURATION", converter = DurationParser.class,
      description = "HTTP/2 keepalive ping interval; off by default. Under 5 minutes the "
          + "runtime's grpc-go server may answer too_many_pings and end the stream.")
  private Duration keepAlive;

  @CommandLine.Spec
  private CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws InterruptedException, IOException {
    LoadResult loaded = new PluginLoader().load(plugins.pluginsDir());
    loaded.problems().forEach(p -> log.warn("plugin {} not loaded: {}", p.plugin(), p.reason()));
    if (plugins.strict() && loaded.hasProblems()) {
      spec.commandLine().getErr().println("run: --strict: " + loaded.problems().size()
          + " plugin problem(s), not starting (see 'list-handlers')");
      return ExitCodes.PROBLEMS;
    }
    if (loaded.catalog().size() == 0) {
      spec.commandLine().getErr().println("run: no handlers to serve in "
          + plugins.pluginsDir() + " (see 'list-handlers')");
      return ExitCodes.PROBLEMS;
    }
    try (StateDir stateDir = openStateDir();
        DurableOutbox outbox = DurableOutbox.open(stateDir,
            new DurableOutbox.Options(durability, orphanRetention, InstantSource.system()))) {
      WorkOptions options = options(loaded, stateDir);
      WorkClient client = new WorkClient(options, loaded.catalog(), outbox);
      CountDownLatch stopped = new CountDownLatch(1);
      ShutdownSignals.install(() -> {
        try {
          client.drain();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } finally {
          stopped.countDown();
        }
      });
      log.info("worker {} serving {} handlers from {}; state in {} (durability {})",
          options.identity().workerId(), loaded.catalog().size(), plugins.pluginsDir(),
          stateDir.path(), durability.flagName());
      client.start();
      try (var pruner = Executors.newSingleThreadScheduledExecutor(
          Thread.ofPlatform().name("phrony-outbox-prune").daemon().factory())) {
        pruner.scheduleAtFixedRate(() -> outbox.prune(Instant.now()), 1, 1, TimeUnit.HOURS);
        stopped.await();
        pruner.shutdownNow();
      }
    }
    return ExitCodes.OK;
  }

  private StateDir openStateDir() throws IOException {
    try {
      return StateDir.open(stateDirOption.resolve());
    } catch (StateDirLockedException e) {
      throw new UserErrorException(e.getMessage(), e);
    }
  }

  private WorkOptions options(LoadResult loaded, StateDir stateDir) {
    var env = System.getenv();
    String target = runtime != null ? runtime
        : Optional.ofNullable(env.get(ENV_RUNTIME_ADDR)).filter(s -> !s.isBlank())
            .orElse(DEFAULT_RUNTIME_ADDR);
    WorkerIdentity identity = WorkerIdentity.resolve(Optional.ofNullable(workerId), env,
        () -> stateDir.workerId(WorkerIdentity::generateId), loaded.imageDigest());
    if (workloadIdentity != null || imageDigest != null) {
      identity = new WorkerIdentity(identity.workerId(),
          workloadIdentity != null ? workloadIdentity : identity.workloadIdentity(),
          imageDigest != null ? imageDigest : identity.imageDigest());
    }
    try {
      WorkOptions o = WorkOptions.defaults(target, identity).withDrainTimeout(drainTimeout)
          .withKeepAlive(Optional.ofNullable(keepAlive));
      if (maxResultBytes != null) {
        o = o.withMaxResultBytes(maxResultBytes);
      }
      if (maxInboundBytes != null) {
        o = o.withMaxInboundBytes(maxInboundBytes);
      }
      return o;
    } catch (IllegalArgumentException e) {
      throw new UserErrorException(e.getMessage(), e);
    }
  }
}
