package dev.phrony.worker.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The top-level {@code phrony-worker} command; subcommands do the work. */
@Command(
    name = "phrony-worker",
    mixinStandardHelpOptions = true,
    versionProvider = VersionCommand.Provider.class,
    description = "Hosts tool handlers as plugins for the Phrony agent runtime.",
    subcommands = {VersionCommand.class, CommandLine.HelpCommand.class},
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
        "0:success",
        "1:usage error (bad flag, file or value)",
        "3:some plugins or bindings had problems"})
public final class PhronyWorkerCommand implements Runnable {

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  /** A command line with the project's conventions (exit codes, error handling) applied. */
  public static CommandLine newCommandLine() {
    return new CommandLine(new PhronyWorkerCommand());
  }

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "a command is required");
  }
}
