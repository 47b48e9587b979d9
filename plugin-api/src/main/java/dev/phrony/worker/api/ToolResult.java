package dev.phrony.worker.api;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * What a handler returns. The payload reaches the model as text; JSON is the convention.
 *
 * <ul>
 *   <li>{@link #json(String)}: a JSON document the handler already has as text;
 *   <li>{@link #of(Object)}: any value (records, maps, lists), encoded as JSON by the host;
 *   <li>{@link #text(String)}: plain text, sent as is.
 * </ul>
 */
public sealed interface ToolResult permits ToolResult.Json, ToolResult.Value, ToolResult.Text {

  /** A JSON document given as text; the host checks that it parses. */
  static ToolResult json(String json) {
    return new Json(json.getBytes(StandardCharsets.UTF_8));
  }

  /** A JSON document given as UTF-8 bytes; the host checks that it parses. */
  static ToolResult json(byte[] utf8Json) {
    return new Json(utf8Json.clone());
  }

  /** A value the host encodes as JSON with its codec (records, maps, lists, strings, numbers). */
  static ToolResult of(Object value) {
    return new Value(value);
  }

  /** Plain text, sent to the model as is. */
  static ToolResult text(String text) {
    return new Text(text);
  }

  /** A JSON payload as UTF-8 bytes. */
  record Json(byte[] utf8) implements ToolResult {
    public Json {
      Objects.requireNonNull(utf8, "utf8");
    }
  }

  /** A value to be encoded by the host's JSON codec; {@code null} encodes as JSON null. */
  record Value(Object value) implements ToolResult {}

  /** Text sent as is. */
  record Text(String text) implements ToolResult {
    public Text {
      Objects.requireNonNull(text, "text");
    }
  }
}
