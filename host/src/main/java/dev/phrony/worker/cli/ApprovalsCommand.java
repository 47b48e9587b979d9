package dev.phrony.worker.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.phrony.worker.dev.ApprovalsView;
import java.io.PrintWriter;
import java.time.ZoneId;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code phrony-worker approvals}: the calls a running {@code dev} holds for approval. */
@Command(
    name = "approvals",
    mixinStandardHelpOptions = true,
    description = {
      "Lists the calls a running 'phrony-worker dev' holds for a human's approval.",
      "",
      "dev holds a call before dispatch when its tool@version matches a --require-approval "
          + "pattern (or dev: require-approval: in worker.yaml). Answer one with "
          + "'phrony-worker approve ID' or 'phrony-worker deny ID'."
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:listed (none waiting included)",
      "1:usage error (bad flag)",
      "6:no phrony-worker dev at the control address (start it with 'phrony-worker dev')"
    })
final class ApprovalsCommand implements Callable<Integer> {

  @Mixin private FormatOption format;

  @Mixin private ControlOption control;

  @CommandLine.Spec private CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    JsonNode answer = control.client().approvals();
    PrintWriter out = spec.commandLine().getOut();
    out.print(
        format.json()
            ? answer.toPrettyString() + "\n"
            : ApprovalsView.table(answer, ZoneId.systemDefault()));
    out.flush();
    return ExitCodes.OK;
  }
}
