package dev.phrony.worker.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.phrony.runtime.v1.Approval;
import dev.phrony.worker.dev.ApprovalsClient;
import dev.phrony.worker.dev.ApprovalsView;
import dev.phrony.worker.dev.ControlClient;
import java.io.PrintWriter;
import java.time.ZoneId;
import java.util.List;
import java.util.Optional;
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
      "dev holds a call before dispatch when an agent's policy says so (dev --agent) or its "
          + "tool@version matches a --require-approval pattern (or dev: require-approval: in "
          + "worker.yaml). Answer one with 'phrony-worker approve ID' or 'phrony-worker deny ID'.",
      "",
      "Asks the runtime's ListApprovals RPC on --runtime (dev's, or a Phrony runtime's); with "
          + "--control, dev's control API instead."
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:listed (none waiting included)",
      "1:usage error (bad flag)",
      "6:no phrony-worker dev at the control address (start it with 'phrony-worker dev')"
    })
final class ApprovalsCommand implements Callable<Integer> {

  @Mixin private FormatOption format;

  @Mixin private ApprovalsTarget target;

  @CommandLine.Spec private CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    Optional<ControlClient> control = target.controlApi();
    if (control.isPresent()) {
      JsonNode answer = control.get().approvals();
      out.print(
          format.json()
              ? answer.toPrettyString() + "\n"
              : ApprovalsView.table(answer, ZoneId.systemDefault()));
    } else {
      try (ApprovalsClient rpc = target.rpc()) {
        List<Approval> pending = rpc.pending();
        out.print(
            format.json()
                ? ApprovalsView.json(pending) + "\n"
                : ApprovalsView.table(pending, ZoneId.systemDefault()));
      }
    }
    out.flush();
    return ExitCodes.OK;
  }
}
