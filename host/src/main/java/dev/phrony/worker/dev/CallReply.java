package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Outcome;
import java.util.Locale;
import java.util.Objects;

/**
 * How a call submitted to {@code phrony-worker dev} ended: the body of a {@code POST /v1/calls}
 * answer. One of three outcomes, as the model would see them:
 *
 * <pre>{@code
 * {"call_id": "s-1a2b3c4d:av-local:1:0", "session_id": "s-1a2b3c4d",
 *  "tool": "weather.get-forecast", "version": "1.0.0",
 *  "outcome": "result", "payload": {...},             // or "payload_text": "..." when not JSON
 *  "worker_id": "host-1a2b3c4d", "elapsed_ms": 12}
 *
 * "outcome": "tool_error", "error": {"code": "invalid_args", "message": "...", "nack": false}
 * "outcome": "dispatch_error", "error": {"kind": "no_handler", "message": "..."}, "hint": "..."
 * }</pre>
 */
public final class CallReply {

  /** The three outcomes, spelled as on the wire. */
  public enum Kind {
    /** The handler's result. */
    RESULT,
    /** A handler-reported failure (an error result or a {@code nack}). */
    TOOL_ERROR,
    /** The runtime got no answer from a worker: no handler, no free slot, timeout, cancel... */
    DISPATCH_ERROR;

    String wire() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  private final JsonNode json;
  private final Kind kind;

  private CallReply(JsonNode json, Kind kind) {
    this.json = json;
    this.kind = kind;
  }

  /**
   * Reads an answer.
   *
   * @throws IllegalArgumentException if it is not one
   */
  static CallReply fromJson(JsonNode json) {
    Objects.requireNonNull(json, "json");
    String outcome = json.path("outcome").asText("");
    for (Kind k : Kind.values()) {
      if (k.wire().equals(outcome)) {
        return new CallReply(json, k);
      }
    }
    throw new IllegalArgumentException("not a call outcome: " + Json.pretty(json));
  }

  /**
   * A call's ids and key, and with {@code withArgs} its arguments ({@code args}, or {@code
   * args_text} when they are not JSON): the fields every answer and event names a call by.
   */
  static ObjectNode callFields(Call call, boolean withArgs) {
    ObjectNode o = Json.object();
    o.put("call_id", call.callId());
    o.put("session_id", call.sessionId());
    o.put("tool", call.tool());
    o.put("version", call.version());
    if (withArgs && Json.isJson(call.args())) {
      o.set("args", Json.parse(call.args()));
    } else if (withArgs) {
      o.put("args_text", call.argsText());
    }
    return o;
  }

  /**
   * An answer told by the runtime's session events ({@link CallClient}): a result's payload, or a
   * tool error's or dispatch error's line ({@code code: message}) and a hint.
   */
  static CallReply of(Kind kind, String callId, byte[] payload, String errorLine, String hint) {
    ObjectNode o = Json.object();
    o.put("call_id", callId);
    o.put("outcome", kind.wire());
    if (kind == Kind.RESULT && Json.isJson(payload)) {
      o.set("payload", Json.parse(payload));
    } else if (kind == Kind.RESULT) {
      o.put("payload_text", new String(payload, java.nio.charset.StandardCharsets.UTF_8));
    } else {
      o.putObject("error").put("message", errorLine);
    }
    if (hint != null) {
      o.put("hint", hint);
    }
    return new CallReply(o, kind);
  }

  /** The answer for a completed call. */
  static ObjectNode toJson(CallService.Completed c) {
    Outcome outcome = c.outcome();
    ObjectNode o = callFields(c.call(), false);
    switch (outcome) {
      case Outcome.Result r -> {
        o.put("outcome", Kind.RESULT.wire());
        if (Json.isJson(r.payload())) {
          o.set("payload", Json.parse(r.payload()));
        } else {
          o.put("payload_text", r.text());
        }
      }
      case Outcome.ToolError e -> {
        o.put("outcome", Kind.TOOL_ERROR.wire());
        ObjectNode error = o.putObject("error");
        error.put("code", e.code());
        error.put("message", e.message());
        error.put("nack", e.fromNack());
      }
      case Outcome.DispatchError e -> {
        o.put("outcome", Kind.DISPATCH_ERROR.wire());
        ObjectNode error = o.putObject("error");
        error.put("kind", e.kind().name().toLowerCase(Locale.ROOT));
        error.put("message", e.message());
      }
    }
    if (c.hint() != null) {
      o.put("hint", c.hint());
    }
    if (outcome.trace().workerId() != null) {
      o.put("worker_id", outcome.trace().workerId());
    }
    o.put("elapsed_ms", outcome.trace().elapsed().toMillis());
    return o;
  }

  public Kind kind() {
    return kind;
  }

  public String callId() {
    return json.path("call_id").asText();
  }

  public String sessionId() {
    return json.path("session_id").asText();
  }

  /** The result payload: pretty JSON, or the text as the handler gave it when it is not JSON. */
  public String payload() {
    JsonNode payload = json.get("payload");
    return payload != null ? Json.pretty(payload) : json.path("payload_text").asText("");
  }

  /** The tool error code, or the dispatch error kind ({@code no_handler}, {@code timeout}...). */
  public String errorCode() {
    JsonNode error = json.path("error");
    return kind == Kind.DISPATCH_ERROR ? error.path("kind").asText() : error.path("code").asText();
  }

  /** The error message, on one line (the runtime joins causes with newlines). */
  public String errorMessage() {
    return json.path("error").path("message").asText().strip().replace("\n", "; ");
  }

  /** {@code code: message}, as the model reads a tool error. */
  public String errorLine() {
    String code = errorCode();
    String message = errorMessage();
    return code.isEmpty() ? message : message.isEmpty() ? code : code + ": " + message;
  }

  /** What probably caused a dispatch error, or null. */
  public String hint() {
    JsonNode hint = json.get("hint");
    return hint == null || hint.isNull() ? null : hint.asText();
  }

  /** The whole answer. */
  public JsonNode json() {
    return json;
  }

  @Override
  public String toString() {
    return Json.pretty(json);
  }
}
