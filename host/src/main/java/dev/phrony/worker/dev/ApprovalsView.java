package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.JsonNode;
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
