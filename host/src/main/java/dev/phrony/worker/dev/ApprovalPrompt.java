package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.JsonNode;
import dev.phrony.runtime.v1.RunSessionInteractiveApprovalRequired;
import dev.phrony.worker.UserErrorException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.Locale;
import java.util.Objects;

/**
 * {@code call} on a terminal when its call is held for approval: shows the approval and asks {@code
 * approve? [y/N/e(dit)]}. {@code y} approves, {@code n} or nothing denies, {@code e} asks for
 * replacement arguments (one line of JSON) and approves with them; anything else is asked again.
 * Arguments that are not JSON or break the handler's schema are told and asked for again; the
 * approval stays waiting meanwhile.
 */
public final class ApprovalPrompt {
  /** Where an answer goes. */
  public interface Answerer {
    /**
     * Sends a human's answer.
     *
     * @param args replacement arguments (JSON), or null
     * @throws Refused when it was not taken
     */
    void send(String approvalId, boolean approved, String args) throws Refused;
  }

  /** An answer that was not taken: why, and whether the approval still waits (bad args). */
  public static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;

    private final boolean stillWaiting;

    public Refused(String message, boolean stillWaiting) {
      super(message, null, false, false);
      this.stillWaiting = stillWaiting;
    }
  }

  private final BufferedReader in;
  private final PrintWriter out;
  private final Answerer answerer;

  public ApprovalPrompt(BufferedReader in, PrintWriter out, Answerer answerer) {
    this.in = Objects.requireNonNull(in, "in");
    this.out = Objects.requireNonNull(out, "out");
    this.answerer = Objects.requireNonNull(answerer, "answerer");
  }

  /** Answers through dev's control API. */
  public ApprovalPrompt(BufferedReader in, PrintWriter out, ControlClient client) {
    this(
        in,
        out,
        (id, approved, args) -> {
          try {
            client.answer(id, approved, null, args);
          } catch (ControlRequestException e) {
            throw new Refused(e.getMessage(), e.status() == 422);
          }
        });
  }

  /** Answers with the runtime's {@code DecideApproval}. */
  public static Answerer deciding(ApprovalsClient client) {
    return (id, approved, args) -> {
      try {
        client.decide(id, approved, null, args, null);
      } catch (ApprovalsClient.Refused e) {
        throw new Refused(e.getMessage(), e.code() == io.grpc.Status.Code.INVALID_ARGUMENT);
      }
    };
  }

  /** Asks about an {@code approval_required} event of the runtime's session stream. */
  public void ask(RunSessionInteractiveApprovalRequired approval) {
    ask(SessionFollower.object(approval));
  }

  /**
   * Asks about the {@code approval_required} event {@code approval} until it is answered, it is no
   * longer waiting, or the input ends (it then stays waiting for another answer).
   */
  public void ask(JsonNode approval) {
    String id = approval.path("approval_id").asText();
    out.println(
        approval.path("tool").asText()
            + "@"
            + approval.path("version").asText()
            + " is held for approval "
            + id
            + " ("
            + approval.path("reason").asText()
            + ")"
            + (approval.path("expires_at").asText().isEmpty()
                ? ""
                : ", expires " + approval.path("expires_at").asText()));
    JsonNode args = approval.get("args");
    out.println(
        "args: " + (args != null ? Json.pretty(args) : approval.path("args_text").asText()));
    while (true) {
      String answer = line("approve? [y/N/e(dit)] ");
      if (answer == null) {
        out.println();
        out.println("no answer: " + id + " still waits (phrony-worker approve|deny " + id + ")");
        out.flush();
        return;
      }
      String a = answer.strip().toLowerCase(Locale.ROOT);
      if (a.equals("e") || a.equals("edit")) {
        String edited = line("args (one line of JSON): ");
        if (edited == null) {
          continue;
        }
        String json;
        try {
          json = CallRequest.checkArgs(edited, "the args");
        } catch (UserErrorException e) {
          out.println(e.getMessage());
          continue;
        }
        if (send(id, true, json)) {
          return;
        }
      } else if (a.equals("y")
          || a.equals("yes")
          || a.isEmpty()
          || a.equals("n")
          || a.equals("no")) {
        if (send(id, a.startsWith("y"), null)) {
          return;
        }
      } else {
        out.println("answer y (approve), n (deny) or e (edit the args)");
      }
    }
  }

  /** Sends an answer; false when dev refused it but the approval still waits. */
  private boolean send(String id, boolean approved, String args) {
    try {
      answerer.send(id, approved, args);
      out.println(
          approved
              ? "approved " + id + (args != null ? " with the new args" : "")
              : "denied " + id);
      out.flush();
      return true;
    } catch (Refused e) {
      out.println(e.getMessage());
      out.flush();
      return !e.stillWaiting; // bad args: ask again; otherwise it no longer waits
    }
  }

  private String line(String prompt) {
    out.print(prompt);
    out.flush();
    try {
      return in.readLine();
    } catch (IOException e) {
      return null;
    }
  }
}
