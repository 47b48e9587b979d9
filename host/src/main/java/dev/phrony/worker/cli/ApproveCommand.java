package dev.phrony.worker.cli;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code phrony-worker approve}: lets a call held by {@code dev} go to its worker. */
@Command(
    name = "approve",
    mixinStandardHelpOptions = true,
    description = {
      "Approves a call that a running 'phrony-worker dev' holds for approval: it goes to a "
          + "worker now, as proposed or with the arguments given here.",
      "",
      "Replacement arguments must fit the handler's input schema: if they do not, the "
          + "approval is refused with the JSON pointer of the problem and stays waiting."
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:approved: the call is dispatched (its result goes to whoever made it)",
      "1:usage error, or refused: arguments that are not JSON or break the input schema "
          + "(the approval stays waiting), or no such approval waiting (answered, expired)",
      "6:no phrony-worker dev at the control address (start it with 'phrony-worker dev')"
    })
final class ApproveCommand implements Callable<Integer> {

  @Mixin private ApprovalAnswer answer;

  @Option(
      names = "--args",
      paramLabel = "JSON",
      description =
          "Replace the proposed arguments with this JSON value (quote it for the "
              + "shell: '{\"amount\":5}').")
  private String args;

  @Option(
      names = "--args-file",
      paramLabel = "FILE",
      description = "Replace them with the JSON in FILE ('-': stdin) instead.")
  private Path argsFile;

  @CommandLine.Spec private CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    return answer.send(spec, true, ArgsFile.choose(spec, args, "--args", argsFile));
  }
}
