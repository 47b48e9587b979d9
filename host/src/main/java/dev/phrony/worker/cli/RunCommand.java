package dev.phrony.worker.cli;

import dev.phrony.worker.config.WorkerConfig;
import dev.phrony.worker.ops.LogSetup;
import dev.phrony.worker.reload.NotStartingException;
import dev.phrony.worker.serve.Worker;
import dev.phrony.worker.transport.LeakDetection;
import java.io.IOException;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code phrony-worker run}: serve the runtime until SIGINT/SIGTERM. */
@Command(
    name = "run",
    mixinStandardHelpOptions = true,
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
          + "the result."
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:stopped cleanly after a signal",
      "1:usage error (bad flag, env or config value, missing plugins directory, "
          + "HTTP port in use)",
      "3:--strict and some plugins had problems, or no handler to serve; once serving:"
          + " out of memory (the JVM's status for -XX:+ExitOnOutOfMemoryError)",
      "8:a core thread died of an Error (the log names it); a restart is safe",
      "9:a plugin called System.exit or Runtime.halt (stderr names the caller)"
    })
final class RunCommand implements Callable<Integer> {
  @Mixin private ConfigOption configOption;

  @Mixin private RunOptions options;

  @CommandLine.Spec private CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws InterruptedException, IOException {
    WorkerConfig config = WorkerSettings.resolveForRun(options, spec);
    // Before anything logs: the format and level are settings like any other.
    LogSetup.apply(config.logFormat(), config.logLevel());
    LeakDetection.offUnlessSet(); // before the first buffer: see why there
    try (Worker worker = Worker.open(config, ReloadReport::routes)) {
      CountDownLatch stopped = ShutdownSignals.install(worker::drain);
      worker.start();
      ReloadSignal.install(() -> worker.reload("SIGHUP"));
      stopped.await();
    } catch (NotStartingException e) {
      spec.commandLine().getErr().println(spec.qualifiedName() + ": " + e.getMessage());
      return ExitCodes.PROBLEMS;
    }
    return ExitCodes.OK;
  }
}
