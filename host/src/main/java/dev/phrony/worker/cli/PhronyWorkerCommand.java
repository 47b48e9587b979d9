package dev.phrony.worker.cli;

import dev.phrony.worker.Distribution;
import dev.phrony.worker.NearMiss;
import dev.phrony.worker.UserErrorException;
import dev.phrony.worker.config.ConfigException;
import dev.phrony.worker.config.LayeredDefaults;
import dev.phrony.worker.dev.ControlUnreachableException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The top-level {@code phrony-worker} command; subcommands do the work. */
@Command(
    name = "phrony-worker",
    mixinStandardHelpOptions = true,
    versionProvider = VersionCommand.Provider.class,
    description = "Hosts tool handlers as plugins for the Phrony agent runtime.",
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:success",
      "1:usage error (bad flag, file or value)",
      "3:some plugins or bindings had problems",
      "4:call: the tool answered with an error",
      "5:call: no handler, no free slot, or another dispatch error",
      "6:call, approvals, approve, deny: no phrony-worker dev at the control address",
      "8:run, dev: a core thread died of an Error (the log names it); a restart is safe",
      "9:a plugin called System.exit or Runtime.halt (stderr names the caller)",
      "70:internal error (a bug; the stack trace is printed)"
    })
public final class PhronyWorkerCommand implements Runnable {
  /**
   * The subcommands, in the order help lists them. Added in code rather than in the annotation so
   * that a command line built for one command ({@link #newCommandLine(String[])}) reads only that
   * command's options: picocli builds the model of every command it is given, which cost about a
   * fifth of a command's start (0.2 s of {@code version}, on every command).
   */
  static final Map<String, Class<?>> SUBCOMMANDS = subcommands();

  private static Map<String, Class<?>> subcommands() {
    Map<String, Class<?>> all = new LinkedHashMap<>();
    all.put("version", VersionCommand.class);
    all.put("list-handlers", ListHandlersCommand.class);
    all.put("check", CheckCommand.class);
    all.put("tool-manifest", ToolManifestCommand.class);
    all.put("run", RunCommand.class);
    all.put("config", ConfigCommand.class);
    all.put("outbox", OutboxCommand.class);
    all.put("dev", DevCommand.class);
    all.put("call", CallCommand.class);
    all.put("approvals", ApprovalsCommand.class);
    all.put("approve", ApproveCommand.class);
    all.put("deny", DenyCommand.class);
    all.put("new-plugin", NewPluginCommand.class);
    all.put("help", CommandLine.HelpCommand.class);
    return Collections.unmodifiableMap(all);
  }

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  /**
   * A command line with the project's conventions applied. This is the one place that maps
   * exceptions to exit codes: usage errors (bad flags, and {@link UserErrorException} from a
   * command) print one line on stderr and exit {@value ExitCodes#USAGE}; an unreachable control
   * address ({@link ControlUnreachableException}) prints one line and exits {@value
   * ExitCodes#CONTROL_UNREACHABLE}; anything else is a bug and exits {@value ExitCodes#INTERNAL}
   * with its stack trace. Commands return their own codes and never call {@link System#exit}.
   */
  public static CommandLine newCommandLine() {
    return newCommandLine(new String[0]);
  }

  /**
   * The command line for running {@code args}: when they name a subcommand, only that one (and
   * {@code run}, whose settings {@code list-handlers} reads) is built; for anything else (no
   * command, {@code --help}, {@code help}, a typo) all of them, so help and suggestions are whole.
   */
  public static CommandLine newCommandLine(String[] args) {
    String home = System.getProperty(Distribution.HOME_PROPERTY);
    return newCommandLine(
        System.getenv(),
        home == null || home.isBlank() ? Optional.empty() : Optional.of(Path.of(home.strip())),
        args.length > 0 && !args[0].equals("help") && SUBCOMMANDS.containsKey(args[0])
            ? Optional.of(args[0])
            : Optional.empty());
  }

  /**
   * The same, with the environment and the distribution's home given (tests), with every
   * subcommand: the settings of {@code run} and {@code config} come from flags, then {@code env},
   * then the config file, then defaults.
   */
  public static CommandLine newCommandLine(Map<String, String> env, Optional<Path> home) {
    return newCommandLine(env, home, Optional.empty());
  }

  private static CommandLine newCommandLine(
      Map<String, String> env, Optional<Path> home, Optional<String> only) {
    CommandLine cmd = configure(new CommandLine(new PhronyWorkerCommand()));
    SUBCOMMANDS.forEach(
        (name, command) -> {
          if (only.isEmpty()
              || only.get().equals(name)
              || (name.equals("run") && only.get().equals("list-handlers"))) {
            cmd.addSubcommand(name, command);
          }
        });
    Map<String, CommandLine> built = cmd.getSubcommands();
    for (String name : new String[] {"run", "config"}) {
      if (built.containsKey(name)) {
        built.get(name).setDefaultValueProvider(new LayeredDefaults(env, home));
      }
    }
    if (built.containsKey("list-handlers")) {
      // list-handlers reads run's worker.yaml: its plugins folder and its handler settings.
      built
          .get("list-handlers")
          .setDefaultValueProvider(
              new LayeredDefaults(env, home).readingSettingsOf(built.get("run").getCommandSpec()));
    }
    return cmd;
  }

  /** Applies the exit-code conventions to a command line (tests run subcommands standalone). */
  static CommandLine configure(CommandLine commandLine) {
    return commandLine
        .setParameterExceptionHandler(PhronyWorkerCommand::onUsageError)
        .setExecutionExceptionHandler(PhronyWorkerCommand::onExecutionError);
  }

  private static int onUsageError(CommandLine.ParameterException e, String[] args) {
    CommandLine cmd = e.getCommandLine();
    String name = cmd.getCommandSpec().qualifiedName();
    String message =
        e instanceof CommandLine.UnmatchedArgumentException u
            ? nearMiss(u).orElse(e.getMessage())
            : e.getMessage();
    cmd.getErr().println(name + ": " + message + " (see '" + name + " --help')");
    cmd.getErr().flush();
    return ExitCodes.USAGE;
  }

  /**
   * "Did you mean" for the first word not understood, when a command or flag of this command is
   * close to it ({@code lsit-handlers}, {@code --plugns}); empty when none is.
   */
  private static Optional<String> nearMiss(CommandLine.UnmatchedArgumentException e) {
    if (e.getUnmatched().isEmpty()) {
      return Optional.empty();
    }
    String typed = e.getUnmatched().getFirst();
    CommandLine.Model.CommandSpec spec = e.getCommandLine().getCommandSpec();
    if (typed.startsWith("-")) {
      String flag = typed.contains("=") ? typed.substring(0, typed.indexOf('=')) : typed;
      List<String> names = new ArrayList<>();
      spec.options().stream()
          .filter(o -> !o.hidden())
          .forEach(o -> names.addAll(List.of(o.names())));
      return NearMiss.closest(flag, names)
          .map(f -> "unknown option '" + flag + "'; did you mean '" + f + "'?");
    }
    return NearMiss.closest(typed, spec.subcommands().keySet())
        .map(c -> "'" + typed + "' is not a command; did you mean '" + c + "'?");
  }

  private static int onExecutionError(
      Exception e, CommandLine cmd, CommandLine.ParseResult parsed) {
    if (e instanceof ConfigException c) {
      // One line per problem, each naming its file and line, variable or flag.
      c.problems()
          .forEach(p -> cmd.getErr().println(cmd.getCommandSpec().qualifiedName() + ": " + p));
      cmd.getErr().flush();
      return ExitCodes.USAGE;
    }
    if (e instanceof UserErrorException
        || e instanceof java.io.IOException
        || e instanceof java.io.UncheckedIOException) {
      cmd.getErr().println(cmd.getCommandSpec().qualifiedName() + ": " + e.getMessage());
      cmd.getErr().flush();
      return ExitCodes.USAGE;
    }
    if (e instanceof ControlUnreachableException) {
      cmd.getErr().println(cmd.getCommandSpec().qualifiedName() + ": " + e.getMessage());
      cmd.getErr().flush();
      return ExitCodes.CONTROL_UNREACHABLE;
    }
    cmd.getErr().println(cmd.getCommandSpec().qualifiedName() + ": internal error: " + e);
    e.printStackTrace(cmd.getErr());
    cmd.getErr().flush();
    return ExitCodes.INTERNAL;
  }

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "a command is required");
  }
}
