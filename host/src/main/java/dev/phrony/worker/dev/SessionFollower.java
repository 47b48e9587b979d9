package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import dev.phrony.runtime.v1.RunSessionInteractiveServerMsg;
import dev.phrony.runtime.v1.RunSessionInteractiveStart;
import dev.phrony.worker.UserErrorException;
import java.io.PrintWriter;

/**
 * {@code call --session ID --follow --runtime ADDR}: attaches to a session of the runtime's session
 * API ({@code RunSessionInteractive} with {@code start.session_id}) and prints each of its events
 * as one JSON line, named as the proto names it ({@code {"tool_call": {"call_id": ..., "args":
 * {...}}}}; {@code bytes} fields holding JSON, as {@code args} and {@code payload} do, are shown as
 * that JSON), until the session ends.
 */
public final class SessionFollower {
  private SessionFollower() {}

  /**
   * Follows session {@code sessionId} at {@code target} until it ends.
   *
   * @throws UserErrorException when the runtime refuses (no such session)
   * @throws ControlUnreachableException when nothing answers at {@code target}
   */
  public static void follow(String target, String sessionId, PrintWriter out)
      throws InterruptedException {
    try (InteractiveStream stream =
        new InteractiveStream(
            target, RunSessionInteractiveStart.newBuilder().setSessionId(sessionId).build())) {
      while (true) {
        switch (stream.next()) {
          case InteractiveStream.Event e -> {
            out.println(json(e.msg()));
            out.flush();
          }
          case InteractiveStream.End end -> {
            if (end.status().isOk()) {
              return;
            }
            throw stream.failure(end.status());
          }
        }
      }
    }
  }

  private static String json(RunSessionInteractiveServerMsg m) {
    return object(m).toString();
  }

  /** A message's set fields, by their proto names. */
  static ObjectNode object(Message m) {
    ObjectNode o = JsonNodeFactory.instance.objectNode();
    for (var e : m.getAllFields().entrySet()) {
      FieldDescriptor f = e.getKey();
      if (f.isRepeated()) {
        ArrayNode a = o.putArray(f.getName());
        for (Object item : (java.util.List<?>) e.getValue()) {
          a.add(value(item));
        }
      } else {
        o.set(f.getName(), value(e.getValue()));
      }
    }
    return o;
  }

  private static JsonNode value(Object v) {
    JsonNodeFactory f = JsonNodeFactory.instance;
    return switch (v) {
      case Message m -> object(m);
      case ByteString b -> {
        try {
          yield Json.parse(b.toStringUtf8());
        } catch (RuntimeException notJson) {
          yield f.textNode(b.toStringUtf8());
        }
      }
      case Boolean b -> f.booleanNode(b);
      case Integer i -> f.numberNode(i);
      case Long l -> f.numberNode(l);
      default -> f.textNode(String.valueOf(v));
    };
  }
}
