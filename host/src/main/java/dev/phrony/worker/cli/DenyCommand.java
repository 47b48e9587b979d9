package dev.phrony.worker.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code phrony-worker deny}: ends a call held by {@code dev} without running it. */
@Command(
    name = "deny",
    mixinStandardHelpOptions = true,
    description = {
      "Denies a call that a running 'phrony-worker dev' holds for approval: no worker sees "
          + "it, and it ends with the tool error approval_denied (with the comment), as the "
          + "model would read it."
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:denied",
      "1:usage error, or no such approval waiting (answered, expired)",
      "6:no phrony-worker dev at the control address (start it with 'phrony-worker dev')"
    })
final class DenyCommand implements Callable<Integer> {

  @Mixin private ApprovalAnswer answer;

  @CommandLine.Spec private CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    return answer.send(spec, false, null);
  }
}
