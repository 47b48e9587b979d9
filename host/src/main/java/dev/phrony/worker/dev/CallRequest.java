package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.SyntaxException;
import dev.phrony.worker.UserErrorException;
import dev.phrony.worker.api.ToolDescriptor;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Pattern;

/**
 * A tool call submitted to {@code phrony-worker dev}: the body of {@code POST /v1/calls}.
 *
 * <pre>{@code
 * {"tool": "weather.get-forecast", "version": "1.0.0", "args": {"city": "Oslo"},
 *  "session_id": "s-1", "deadline_ms": 5000}
 * }</pre>
 *
 * @param tool the tool as agent manifests bind it
 * @param version the handler version; {@value ToolDescriptor#DEFAULT_VERSION} (what the runtime
 *     routes unversioned bindings to) when not given
 * @param args the arguments: one JSON value, {@code {}} when not given
 * @param sessionId the session the call belongs to (so that it can be cancelled with the session),
 *     or null for a fresh one
 * @param deadline how long the call may take from its submission, or null for the runtime's own
 *     bound; the handler sees it as {@code deadline_unix_ms}
 */
public record CallRequest(
    String tool, String version, String args, String sessionId, Duration deadline) {

  private static final Pattern TOOL = Pattern.compile("[A-Za-z0-9._-]+");
  private static final Pattern VERSION = Pattern.compile("[A-Za-z0-9._+-]+");

  /** {@code {city:} }: what is left of {@code '{"city":...}'} when a shell ate the quotes. */
  private static final Pattern UNQUOTED_NAME = Pattern.compile("[{,]\\s*[A-Za-z_][\\w.-]*\\s*:");

  private static final List<String> FIELDS =
      List.of("tool", "version", "args", "session_id", "deadline_ms");

  /**
   * Validates and normalises.
   *
   * @throws IllegalArgumentException naming the field that is wrong and how to fix it
   */
  public CallRequest {
    if (tool == null || tool.isBlank()) {
      throw new IllegalArgumentException("tool is required, e.g. \"weather.get-forecast\"");
    }
    if (tool.contains("@")) {
      throw new IllegalArgumentException(
          "tool '"
              + tool
              + "' contains '@': give the version "
              + "apart (\"tool\": \"echo\", \"version\": \"1.0.0\")");
    }
    if (!TOOL.matcher(tool).matches()) {
      throw new IllegalArgumentException(
          "tool '"
              + tool
              + "' can never be served: tool names "
              + "use only letters, digits, '.', '_' and '-'");
    }
    version = version == null ? ToolDescriptor.DEFAULT_VERSION : version;
    if (!VERSION.matcher(version).matches()) {
      throw new IllegalArgumentException(
          "version '"
              + version
              + "' can never be served: "
              + "versions use only letters, digits, '.', '_', '+' and '-' (leave it out for "
              + "unversioned handlers: "
              + ToolDescriptor.DEFAULT_VERSION
              + ")");
    }
    args = args == null ? "{}" : args;
    sessionId = sessionId == null || sessionId.isBlank() ? null : sessionId;
    if (sessionId != null) {
      checkSessionId(sessionId);
    }
    if (deadline != null && (deadline.isNegative() || deadline.isZero())) {
      throw new IllegalArgumentException(
          "deadline must be positive, got " + deadline.toMillis() + " ms");
    }
  }

  /**
   * Refuses a session id that call ids cannot carry: the runtime builds them as {@code
   * session:agent_version:turn:index}.
   *
   * @throws IllegalArgumentException saying why
   */
  static void checkSessionId(String sessionId) {
    if (sessionId.chars().anyMatch(c -> c == ':' || Character.isISOControl(c))) {
      throw new IllegalArgumentException(
          "session id '" + sessionId + "' must not contain ':' or control characters");
    }
  }

  /** A fresh session id, as the runtime would make one: {@code s-} and 8 hex digits. */
  public static String newSessionId() {
    return "s-" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
  }

  /** The routing key {@code tool@version}. */
  public String key() {
    return tool + "@" + version;
  }

  /**
   * The request for {@code TOOL[@VERSION]} as typed on a command line, with arguments already
   * checked by {@link #checkArgs}.
   *
   * @throws UserErrorException when the key is malformed
   */
  public static CallRequest of(
      String toolAtVersion, String args, String sessionId, Duration deadline) {
    Objects.requireNonNull(toolAtVersion, "toolAtVersion");
    int at = toolAtVersion.indexOf('@');
    String tool = at < 0 ? toolAtVersion : toolAtVersion.substring(0, at);
    String version = at < 0 ? null : toolAtVersion.substring(at + 1);
    if (version != null && version.isEmpty()) {
      throw new UserErrorException(
          "'"
              + toolAtVersion
              + "' has an empty version: write "
              + tool
              + "@VERSION, or just "
              + tool
              + " for "
              + ToolDescriptor.DEFAULT_VERSION);
    }
    try {
      return new CallRequest(tool, version, args, sessionId, deadline);
    } catch (IllegalArgumentException e) {
      throw new UserErrorException(e.getMessage(), e);
    }
  }

  /**
   * {@code text} if it is one JSON value, compacted; otherwise a user error naming {@code origin}
   * (e.g. "ARGS_JSON") and the line and column of the problem.
   */
  public static String checkArgs(String text, String origin) {
    JsonNode node;
    try {
      node = Json.parse(text);
    } catch (SyntaxException e) {
      String hint = "";
      if (!text.contains("\"") && UNQUOTED_NAME.matcher(text).find()) {
        hint =
            " (did the shell eat the quotes? put the JSON in single quotes: "
                + "'{\"key\":\"value\"}')";
      }
      throw new UserErrorException(origin + " is not JSON: " + e.getMessage() + hint, e);
    }
    return new String(Json.bytes(node), StandardCharsets.UTF_8);
  }

  /** The request body. */
  public byte[] toJson() {
    ObjectNode o = Json.object();
    o.put("tool", tool);
    o.put("version", version);
    o.set("args", Json.parse(args));
    if (sessionId != null) {
      o.put("session_id", sessionId);
    }
    if (deadline != null) {
      o.put("deadline_ms", deadline.toMillis());
    }
    return Json.bytes(o);
  }

  /**
   * Reads a request body.
   *
   * @throws IllegalArgumentException saying what is wrong with it
   */
  public static CallRequest fromJson(byte[] body) {
    JsonNode json;
    try {
      json = Json.parse(body);
    } catch (SyntaxException e) {
      throw new IllegalArgumentException("the body is not JSON: " + e.getMessage(), e);
    }
    if (!json.isObject()) {
      throw new IllegalArgumentException(
          "the body must be a JSON object like " + "{\"tool\": \"echo\", \"args\": {}}");
    }
    for (Map.Entry<String, JsonNode> field : json.properties()) {
      if (!FIELDS.contains(field.getKey())) {
        throw new IllegalArgumentException(
            "unknown field '"
                + field.getKey()
                + "'; the fields "
                + "are "
                + String.join(", ", FIELDS));
      }
    }
    JsonNode args = json.get("args");
    JsonNode deadline = json.get("deadline_ms");
    Duration d = null;
    if (deadline != null && !deadline.isNull()) {
      if (!deadline.canConvertToLong() || !deadline.isIntegralNumber()) {
        throw new IllegalArgumentException("deadline_ms must be a whole number of milliseconds");
      }
      d = Duration.ofMillis(deadline.longValue());
    }
    return new CallRequest(
        text(json, "tool"),
        text(json, "version"),
        args == null || args.isNull() ? null : new String(Json.bytes(args), StandardCharsets.UTF_8),
        text(json, "session_id"),
        d);
  }

  private static String text(JsonNode json, String field) {
    JsonNode v = json.get(field);
    if (v == null || v.isNull()) {
      return null;
    }
    if (!v.isTextual()) {
      throw new IllegalArgumentException(field + " must be a string");
    }
    return v.textValue();
  }
}
