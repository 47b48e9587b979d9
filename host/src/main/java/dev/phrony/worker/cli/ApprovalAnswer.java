package dev.phrony.worker.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.PrintWriter;
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

  @Mixin private ControlOption control;

  /**
   * Answers the approval and prints one line; a refusal (no such approval waiting, arguments that
   * break the schema) is a user error with dev's explanation.
   *
   * @param args replacement arguments (JSON) of an approval, or null
   */
  int send(CommandLine.Model.CommandSpec spec, boolean approved, String args) {
    JsonNode answer = control.client().answer(approvalId, approved, comment, args);
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
}
