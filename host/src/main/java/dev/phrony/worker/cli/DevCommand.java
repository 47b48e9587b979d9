package dev.phrony.worker.cli;

import dev.phrony.worker.UserErrorException;
import dev.phrony.worker.agent.DevAgents;
import dev.phrony.worker.config.ConfigException;
import dev.phrony.worker.config.ConfigFile;
import dev.phrony.worker.config.DurationParser;
import dev.phrony.worker.config.LayeredDefaults;
import dev.phrony.worker.config.OnOff;
import dev.phrony.worker.dev.ApprovalPolicy;
import dev.phrony.worker.dev.DevHost;
import dev.phrony.worker.dev.DevServer;
import dev.phrony.worker.reload.LiveReload;
import dev.phrony.worker.reload.NotStartingException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code phrony-worker dev}: an embedded runtime, the host and a control API, until Ctrl-C. */
@Command(
    name = "dev",
    mixinStandardHelpOptions = true,
    description = {
      "Runs a local runtime, a worker and a control API: a whole system to develop against.",
      "",
      "A Phrony runtime on loopback, a worker serving the plugins against it, and a control "
          + "API to submit tool calls through it ('phrony-worker call', or curl). Needs "
          + "nothing else: no runtime, no database, no model key.",
      "",
      "Prints the addresses and handlers, then one line per tool_call and tool_result. With "
          + "--no-host only the runtime and the control API run, for a worker developed in any "
          + "language (or 'phrony-worker run --runtime 127.0.0.1:PORT').",
      "",
      "The plugins folder is watched (--watch-plugins off turns it off): after a rebuild "
          + "(mvn package into a folder given with --plugins) the worker reloads, prints "
          + "plugins_reloaded added=... replaced=... removed=..., and the next call reaches "
          + "the new code.",
      "",
      "With --require-approval PATTERN (or dev: require-approval: in worker.yaml) calls of "
          + "matching handlers are held before dispatch, as a human-in-the-loop policy holds "
          + "them: 'phrony-worker approvals' lists them, 'phrony-worker approve ID' or 'deny ID' "
          + "answers one.",
      "",
      "With --agent PATH (an agent folder in the runtime's layout, or a bundle; repeatable) the "
          + "runtime's own session API runs that agent's scenario on the runtime's address: its "
          + "scripted model (provider: stub, stub-script.json) calls the tools, its policies "
          + "deny or hold calls for approval, and each call reaches the worker as the runtime "
          + "would send it. Drive it with the runtime's clients (RunSessionInteractive, "
          + "ListApprovals, DecideApproval, CancelSession).",
      "",
      "Ctrl-C (SIGINT) or SIGTERM drains the worker and stops everything; exit 0. A second "
          + "signal exits at once."
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:stopped cleanly after a signal",
      "1:usage error (bad flag, a port in use, missing plugins directory, a bad worker.yaml)",
      "3:--strict and some plugins had problems; once serving: out of memory",
      "8:a core thread died of an Error (the log names it)",
      "9:a plugin called System.exit or Runtime.halt (stderr names the caller)"
    })
final class DevCommand implements Callable<Integer> {
  @Mixin private PluginsOption plugins;

  @Option(
      names = "--port",
      paramLabel = "PORT",
      defaultValue = "7777",
      description =
          "Loopback port of the runtime's Work stream (default: ${DEFAULT-VALUE}; "
              + "0 picks a free one).")
  private int port;

  @Option(
      names = "--control-port",
      paramLabel = "PORT",
      defaultValue = "7778",
      description =
          "Loopback port of the control API (default: ${DEFAULT-VALUE}; 0 picks a " + "free one).")
  private int controlPort;

  @Option(
      names = "--watch-plugins",
      paramLabel = "on|off",
      defaultValue = "on",
      description = "Reload the plugins when the folder changes (default: on).")
  private String watchPlugins;

  @Option(
      names = "--no-host",
      description = "Run only the runtime and the control API; connect your own worker.")
  private boolean noHost;

  @Option(
      names = ApprovalPolicy.FLAG,
      paramLabel = "PATTERN",
      description =
          "Hold calls of matching handlers for a human's approval before dispatch: a "
              + "tool@version, or a pattern ('*': any characters, e.g. 'payments.*'). Repeatable; "
              + "replaces dev: require-approval: of worker.yaml.")
  private List<String> requireApproval = new ArrayList<>();

  @Option(
      names = ApprovalPolicy.TIMEOUT_FLAG,
      paramLabel = "DURATION",
      converter = DurationParser.class,
      description =
          "A held call nobody answers expires after this long (e.g. 5m) and ends "
              + "with the tool error approval_expired. Default: dev: approval-timeout: of "
              + "worker.yaml, else never.")
  private Duration approvalTimeout;

  @Option(
      names = "--agent",
      paramLabel = "PATH",
      description =
          "Run sessions of this agent on the runtime's session API: a folder with agent.yaml (or"
              + " bundle.yaml) in the runtime's layout, or the manifest; spec.model.provider: stub"
              + " and its stub-script.json. Repeatable.")
  private List<Path> agents = new ArrayList<>();

  @Mixin private ConfigOption configOption;

  @CommandLine.Spec private CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws InterruptedException {
    checkPort(port, "--port");
    checkPort(controlPort, "--control-port");
    if (port == controlPort && port != 0) {
      throw new UserErrorException(
          "--port and --control-port are both " + port + ": give them different ports");
    }
    boolean watch =
        OnOff.parse(watchPlugins)
            .orElseThrow(
                () ->
                    new UserErrorException("--watch-plugins " + watchPlugins + ": use on or off"));
    ApprovalPolicy approvals =
        ApprovalPolicy.resolve(requireApproval, approvalTimeout, devSection());
    DevAgents scenarios = DevAgents.load(agents);
    Optional<DevHost> host = Optional.empty();
    if (noHost) {
      if (spec.commandLine().getParseResult().hasMatchedOption("--plugins")) {
        throw new UserErrorException("--plugins has no effect with --no-host: leave one out");
      }
    } else {
      try {
        host = Optional.of(DevHost.load(plugins.pluginsDir(), plugins.strict()));
      } catch (NotStartingException e) {
        spec.commandLine().getErr().println(spec.qualifiedName() + ": " + e.getMessage());
        return ExitCodes.PROBLEMS;
      }
    }

    DevServer dev;
    try {
      dev =
          DevServer.start(
              new DevServer.Options(
                  port, controlPort, host.map(DevHost::host), approvals, scenarios));
    } catch (DevServer.PortInUseException e) {
      String flag = e.listener() == DevServer.Listener.RUNTIME ? "--port" : "--control-port";
      throw new UserErrorException(
          e.getMessage()
              + " (another 'phrony-worker dev'?): stop "
              + "what uses it, or choose another port with "
              + flag
              + " PORT",
          e);
    }
    CountDownLatch stopped = ShutdownSignals.install(dev::stop);
    PrintWriter out = spec.commandLine().getOut();
    out.print(dev.banner());
    out.flush();
    dev.showEvents(out);
    if (host.isEmpty()) {
      stopped.await();
      return ExitCodes.OK;
    }
    // The author's inner loop: a rebuild into the plugins folder is served without a restart.
    try (LiveReload live =
        host.get()
            .serveLive(
                dev,
                line -> {
                  out.println(line);
                  out.flush();
                })) {
      dev.handlersFrom(() -> ReloadReport.handlers(live.reloader().served()));
      if (watch) {
        live.watch();
      }
      ReloadSignal.install(() -> live.reload("SIGHUP"));
      stopped.await();
    }
    return ExitCodes.OK;
  }

  /**
   * The config file ({@code --config}, {@code $PHRONY_WORKER_CONFIG}, or the distribution's {@code
   * conf/worker.yaml}), read as {@code run} reads it, for its {@code dev:} section; any problem in
   * it stops dev as it stops run.
   */
  private ConfigFile devSection() {
    ConfigFile file =
        LayeredDefaults.fromSystem()
            .readingSettingsOf(new CommandLine(new RunCommand()).getCommandSpec())
            .file(spec);
    if (!file.problems().isEmpty()) {
      throw new ConfigException(file.problems());
    }
    return file;
  }

  private static void checkPort(int port, String flag) {
    if (port < 0 || port > 65_535) {
      throw new UserErrorException(
          flag + " " + port + " is not a port: use 1-65535 (or 0 for " + "any free port)");
    }
  }
}
