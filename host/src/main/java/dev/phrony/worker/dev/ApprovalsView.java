package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.runtime.v1.Approval;
import dev.phrony.worker.TextColumns;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** {@code phrony-worker approvals}: the answer of {@code GET /v1/approvals} for a person. */
public final class ApprovalsView {
  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("HH:mm:ss", Locale.ROOT);

  private ApprovalsView() {}

  /**
   * One row per waiting approval (id, call, key, argument size, when it expires in {@code zone}),
   * then how to answer; or why there is none.
   */
  public static String table(JsonNode answer, ZoneId zone) {
    StringBuilder b = new StringBuilder();
    JsonNode approvals = answer.path("approvals");
    if (approvals.isEmpty()) {
      b.append("no call is waiting for approval");
      if (answer.path("require_approval").isEmpty()) {
        b.append(
            " (this dev holds none: start it with --require-approval PATTERN, or list"
                + " patterns under dev: require-approval: in worker.yaml)");
      }
      return b.append('\n').toString();
    }
    List<List<String>> rows = new ArrayList<>();
    rows.add(List.of("APPROVAL", "CALL", "TOOL", "ARGS", "EXPIRES"));
    for (JsonNode a : approvals) {
      JsonNode args = a.get("args");
      int size =
          args != null
              ? Json.bytes(args).length
              : a.path("args_text").asText().getBytes(StandardCharsets.UTF_8).length;
      rows.add(
          List.of(
              a.path("approval_id").asText(),
              a.path("call_id").asText(),
              a.path("tool").asText() + "@" + a.path("version").asText(),
              size + "B",
              expires(a.path("expires_at").asText(), zone)));
    }
    TextColumns.append(b, rows);
    b.append(
        "\nanswer with: bin/phrony-worker approve ID [--args JSON] [--comment TEXT]"
            + " | bin/phrony-worker deny ID [--comment TEXT]\n");
    return b.toString();
  }

  /** The same for the runtime's {@code ListApprovals} answer. */
  public static String table(List<Approval> pending, ZoneId zone) {
    return pending.isEmpty() ? "no call is waiting for approval\n" : table(json(pending), zone);
  }

  /**
   * The runtime's approvals as {@code GET /v1/approvals} shows them: {@code {"approvals": [...]}},
   * each with the runtime's field names ({@code approval_id}, {@code args} as JSON).
   */
  public static ObjectNode json(List<Approval> approvals) {
    ObjectNode out = Json.object();
    ArrayNode list = out.putArray("approvals");
    for (Approval a : approvals) {
      ObjectNode o = list.addObject();
      o.put("approval_id", a.getId());
      o.put("session_id", a.getSessionId());
      o.put("call_id", a.getCallId());
      o.put("tool", a.getTool());
      o.put("version", a.getVersion());
      String args = a.getArgs().toStringUtf8();
      try {
        o.set("args", Json.parse(args));
      } catch (RuntimeException e) {
        o.put("args_text", args);
      }
      o.put("status", a.getStatus());
      o.put("reason", a.getReason());
      o.put("policy_name", a.getPolicyName());
      o.put("approvals_required", a.getApprovalsRequired());
      o.put("approvals_received", a.getApprovalsReceived());
      o.put("expires_at", a.getExpiresAt());
    }
    return out;
  }

  private static String expires(String at, ZoneId zone) {
    if (at.isEmpty()) {
      return "never";
    }
    try {
      return LocalTime.ofInstant(Instant.parse(at), zone).format(TIME);
    } catch (DateTimeParseException e) {
      return at;
    }
  }
}
