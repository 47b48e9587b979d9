package dev.phrony.worker.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.phrony.runtime.v1.Approval;
import dev.phrony.runtime.v1.DecideApprovalResponse;
import dev.phrony.worker.UserErrorException;
import dev.phrony.worker.dev.ApprovalsClient;
import dev.phrony.worker.dev.ControlClient;
import java.io.PrintWriter;
import java.util.Optional;
import picocli.CommandLine;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * What {@code approve} and {@code deny} have in common ({@code @Mixin ApprovalAnswer answer;}): the
 * approval's id, a comment, where dev is; sending the answer and saying what it did.
 */
final class ApprovalAnswer {
  @Parameters(
      index = "0",
      paramLabel = "ID",
      description = "The approval, e.g. ap-1a2b3c4d (see 'phrony-worker approvals').")
  private String approvalId;

  @Option(
      names = "--comment",
      paramLabel = "TEXT",
      description = "A note with the answer; the model reads a denial's in its tool error.")
  private String comment;

  @Mixin private ApprovalsTarget target;

  /**
   * Answers the approval and prints one line; a refusal (no such approval waiting, arguments that
   * break the schema) is a user error with dev's explanation.
   *
   * @param args replacement arguments (JSON) of an approval, or null
   */
  int send(CommandLine.Model.CommandSpec spec, boolean approved, String args) {
    Optional<ControlClient> control = target.controlApi();
    if (control.isEmpty()) {
      return decide(spec, approved, args);
    }
    JsonNode answer = control.get().answer(approvalId, approved, comment, args);
    String call =
        answer.path("call_id").asText()
            + " ("
            + answer.path("tool").asText()
            + "@"
            + answer.path("version").asText()
            + ")";
    PrintWriter out = spec.commandLine().getOut();
    out.println(
        approved
            ? "approved "
                + approvalId
                + ": call "
                + call
                + " goes to a worker"
                + (answer.path("args_replaced").asBoolean()
                    ? " with the replacement arguments"
                    : "")
            : "denied "
                + approvalId
                + ": call "
                + call
                + " ends with approval_denied; no worker"
                + " sees it");
    out.flush();
    return ExitCodes.OK;
  }

  /** The same through the runtime's RPCs: GetApproval (to say what it was), DecideApproval. */
  private int decide(CommandLine.Model.CommandSpec spec, boolean approved, String args) {
    try (ApprovalsClient rpc = target.rpc()) {
      Approval before = rpc.get(approvalId);
      if (!before.getStatus().equals("pending")) {
        throw new UserErrorException(
            "approval " + approvalId + " is not waiting: it is " + before.getStatus());
      }
      DecideApprovalResponse decided = rpc.decide(approvalId, approved, comment, args, "");
      String call = before.getCallId() + " (" + before.getTool() + "@" + before.getVersion() + ")";
      PrintWriter out = spec.commandLine().getOut();
      out.println(
          switch (decided.getStatus()) {
            case "approved" ->
                "approved "
                    + approvalId
                    + ": call "
                    + call
                    + " goes to a worker"
                    + (args != null ? " with the replacement arguments" : "");
            case "pending" ->
                "approved "
                    + approvalId
                    + ": "
                    + decided.getApprovalsReceived()
                    + " of "
                    + before.getApprovalsRequired()
                    + " approvals; call "
                    + call
                    + " waits for the others";
            default -> "denied " + approvalId + ": call " + call + " is not run; no worker sees it";
          });
      out.flush();
      return ExitCodes.OK;
    }
  }
}
