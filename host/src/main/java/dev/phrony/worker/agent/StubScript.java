package dev.phrony.worker.agent;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The runtime's dev-only scripted model ({@code spec.model.provider: stub}): {@code
 * stub-script.json} beside the agent's manifest, a list of turns, each the events one model
 * completion streams. Read as the runtime reads it ({@code internal/provider/stub.go}): a tool call
 * needs a name and its arguments default to {@code {}}, a completion's stop reason defaults to
 * {@code end_turn}, a failure's message to {@code stub failed}; an empty script, an empty turn or
 * another event type is refused.
 *
 * @param file where it was read from
 * @param turns one list of events per completion, in order
 */
public record StubScript(Path file, List<List<Event>> turns) {

  /** The file the runtime reads beside {@code agent.yaml}. */
  public static final String FILE = "stub-script.json";

  /** The stop reason of a completion that asks for its tool calls to run. */
  public static final String TOOL_USE = "tool_use";

  /** The stop reason of a completion without one. */
  public static final String END_TURN = "end_turn";

  public StubScript {
    turns = turns.stream().map(List::copyOf).toList();
  }

  /** One event of a completion. */
  public sealed interface Event {}

  /** Text the model streams. */
  public record TextDelta(String text) implements Event {}

  /**
   * The model calls a tool by its wire name.
   *
   * @param args JSON, {@code {}} when the script gives none
   */
  public record ToolCall(String name, String args) implements Event {}

  /** The completion ends with {@code stopReason}. */
  public record Completed(String stopReason) implements Event {}

  /** The completion fails with {@code message}. */
  public record Failed(String message) implements Event {}

  /**
   * Reads {@code stub-script.json} in {@code folder}.
   *
   * @throws AgentLoadException when it is missing, not JSON, or not a script the runtime runs
   */
  public static StubScript read(Path folder) {
    Path file = folder.resolve(FILE);
    JsonNode root;
    try {
      byte[] bytes = Files.readAllBytes(file);
      if (bytes.length == 0) {
        throw new AgentLoadException(file + ": " + FILE + " is empty: write {\"turns\": [...]}");
      }
      root = AgentJson.MAPPER.readTree(bytes);
    } catch (NoSuchFileException e) {
      throw new AgentLoadException(
          file
              + ": not found: an agent with spec.model.provider: stub runs the turns of "
              + FILE
              + " beside its manifest; write one ({\"turns\": [[{\"type\": \"tool_call\", ...},"
              + " {\"type\": \"completed\", \"stop_reason\": \"tool_use\"}], ...]})");
    } catch (JsonProcessingException e) {
      throw new AgentLoadException(
          file
              + ":"
              + e.getLocation().getLineNr()
              + ": not JSON: "
              + e.getOriginalMessage().lines().findFirst().orElse(""));
    } catch (IOException e) {
      throw new AgentLoadException(file + ": cannot be read (" + e + ")");
    }
    JsonNode turns = root.path("turns");
    if (!turns.isArray() || turns.isEmpty()) {
      throw new AgentLoadException(
          file + ": turns: the stub script must contain at least one turn");
    }
    List<List<Event>> out = new ArrayList<>();
    for (int i = 0; i < turns.size(); i++) {
      out.add(turn(file, i, turns.get(i)));
    }
    return new StubScript(file, out);
  }

  private static List<Event> turn(Path file, int index, JsonNode turn) {
    String where = file + ": turns[" + index + "]";
    if (!turn.isArray() || turn.isEmpty()) {
      throw new AgentLoadException(where + ": turn " + (index + 1) + " is empty");
    }
    List<Event> events = new ArrayList<>();
    for (int j = 0; j < turn.size(); j++) {
      JsonNode e = turn.get(j);
      String at = where + "[" + j + "]";
      String type = e.path("type").asText("").strip();
      switch (type) {
        case "text_delta" -> events.add(new TextDelta(e.path("text").asText("")));
        case "tool_call" -> {
          String name = e.path("name").asText("").strip();
          if (name.isEmpty()) {
            throw new AgentLoadException(
                at + ".name: tool_call requires name (the binding's wire name, its as:)");
          }
          JsonNode args = e.get("args");
          events.add(
              new ToolCall(name, args == null || args.isNull() ? "{}" : AgentJson.compact(args)));
        }
        case "completed" -> {
          events.add(new Completed(stopReason(e.path("stop_reason").asText(""))));
        }
        case "failed" -> {
          String message = e.path("error").asText("").strip();
          events.add(new Failed(message.isEmpty() ? "stub failed" : message));
        }
        default ->
            throw new AgentLoadException(
                at
                    + ".type: unsupported type \""
                    + type
                    + "\" (the stub model streams text_delta, tool_call, completed and failed)");
      }
    }
    return events;
  }

  /** The runtime's names for a provider's stop reasons; empty is {@code end_turn}. */
  private static String stopReason(String raw) {
    String r = raw.strip().toLowerCase(Locale.ROOT);
    return switch (r) {
      case "", "stop", "end_turn" -> END_TURN;
      case "tool_calls", "tool_use" -> TOOL_USE;
      case "length" -> "max_tokens";
      default -> r;
    };
  }
}
