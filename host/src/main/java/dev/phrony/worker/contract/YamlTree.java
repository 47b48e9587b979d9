package dev.phrony.worker.contract;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLParser;
import dev.phrony.worker.SyntaxException;
import java.io.IOException;
import java.io.Reader;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.error.MarkedYAMLException;

/**
 * YAML documents as a small tree whose every node knows the line it starts on, built from Jackson's
 * streaming YAML parser (a {@code JsonNode} tree has no locations).
 *
 * <p>Scalars keep their text as written: {@code version: 1.10} stays {@code "1.10"} (not the number
 * 1.1), and {@code yes} stays {@code "yes"}, as the runtime's Go decoder reads them into string
 * fields. A YAML null and an empty scalar both read as "no value".
 */
final class YamlTree {
  private static final YAMLFactory FACTORY = YAMLFactory.builder().build();

  private YamlTree() {}

  /** A node and where it starts (1-based). */
  sealed interface Node permits Scalar, Mapping, Sequence {
    int line();
  }

  /**
   * A scalar; {@code text} is null for a YAML null or an empty value. {@code token} is how a YAML
   * reader types it: {@code VALUE_STRING} when quoted or plainly text, a number, a boolean or null
   * when written as one (what a JSON Schema written in YAML means by {@code minimum: 0}).
   */
  record Scalar(String text, JsonToken token, int line) implements Node {
    Scalar(String text, int line) {
      this(text, JsonToken.VALUE_STRING, line);
    }
  }

  /** A mapping with string keys, in document order. */
  record Mapping(Map<String, Node> entries, int line) implements Node {
    Node get(String key) {
      return entries.get(key);
    }
  }

  record Sequence(List<Node> items, int line) implements Node {}

  /**
   * Every document in {@code in}, in order. An empty document ({@code ---} with nothing after it)
   * is a {@link Scalar} with null text, so document numbers match what a reader counts.
   *
   * @throws SyntaxException for text that is not YAML, or YAML this reader does not accept
   */
  static List<Node> read(Reader in) throws IOException, SyntaxException {
    List<Node> documents = new ArrayList<>();
    try (JsonParser parser = FACTORY.createParser(in)) {
      for (JsonToken t = parser.nextToken(); t != null; t = parser.nextToken()) {
        documents.add(node(parser, t));
      }
    } catch (JsonProcessingException e) {
      throw syntaxError(e);
    }
    return documents;
  }

  private static Node node(JsonParser p, JsonToken t) throws IOException, SyntaxException {
    int line = line(p.currentTokenLocation());
    switch (t) {
      case START_OBJECT -> {
        Map<String, Node> entries = new LinkedHashMap<>();
        for (JsonToken k = p.nextToken(); k != JsonToken.END_OBJECT; k = p.nextToken()) {
          String key = p.currentName();
          JsonLocation keyAt = p.currentTokenLocation();
          Node value = node(p, p.nextToken());
          if (entries.putIfAbsent(key, value) != null) {
            // The runtime's decoder (yaml.v3) refuses a repeated key; Jackson would keep the last.
            throw new SyntaxException(
                "mapping key '" + key + "' already defined at line " + entries.get(key).line(),
                line(keyAt),
                column(keyAt));
          }
        }
        return new Mapping(Collections.unmodifiableMap(entries), line);
      }
      case START_ARRAY -> {
        List<Node> items = new ArrayList<>();
        for (JsonToken i = p.nextToken(); i != JsonToken.END_ARRAY; i = p.nextToken()) {
          items.add(node(p, i));
        }
        return new Sequence(List.copyOf(items), line);
      }
      default -> {
        if (p instanceof YAMLParser yaml && yaml.isCurrentAlias()) {
          throw new SyntaxException(
              "YAML aliases (*"
                  + p.getText()
                  + ") are not supported "
                  + "here: write the value out",
              line,
              column(p.currentTokenLocation()));
        }
        String text = t == JsonToken.VALUE_NULL ? null : p.getText();
        return new Scalar(text == null || text.isEmpty() ? null : text, t, line);
      }
    }
  }

  /**
   * The value of {@code node} as JSON, scalars typed as the YAML reader typed them (as the
   * runtime's decoder reads an inline schema into a map of strings, numbers and booleans).
   */
  static JsonNode toJson(Node node) {
    return switch (node) {
      case Mapping m -> {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        m.entries().forEach((k, v) -> o.set(k, toJson(v)));
        yield o;
      }
      case Sequence s -> {
        ArrayNode a = JsonNodeFactory.instance.arrayNode();
        s.items().forEach(i -> a.add(toJson(i)));
        yield a;
      }
      case Scalar s -> scalar(s);
    };
  }

  private static JsonNode scalar(Scalar s) {
    JsonNodeFactory f = JsonNodeFactory.instance;
    if (s.text() == null) {
      return s.token() == JsonToken.VALUE_STRING ? f.textNode("") : f.nullNode();
    }
    return switch (s.token()) {
      case VALUE_NUMBER_INT -> f.numberNode(new BigInteger(s.text().replace("_", "")));
      case VALUE_NUMBER_FLOAT -> floating(s.text());
      case VALUE_TRUE -> f.booleanNode(true);
      case VALUE_FALSE -> f.booleanNode(false);
      default -> f.textNode(s.text());
    };
  }

  private static JsonNode floating(String text) {
    try {
      return JsonNodeFactory.instance.numberNode(new BigDecimal(text.replace("_", "")));
    } catch (NumberFormatException e) {
      return JsonNodeFactory.instance.textNode(text); // .inf, .nan: no JSON number
    }
  }

  private static SyntaxException syntaxError(JsonProcessingException e) {
    // SnakeYAML's own exception (the cause) knows where the problem is and what it is, in
    // parts; Jackson's message repeats them over several lines with a snippet.
    if (e.getCause() instanceof MarkedYAMLException m && m.getProblemMark() != null) {
      Mark at = m.getProblemMark();
      String problem = m.getProblem() == null ? "invalid YAML" : m.getProblem();
      String context =
          m.getContext() == null
              ? ""
              : " ("
                  + m.getContext()
                  + (m.getContextMark() == null
                      ? ""
                      : " at line "
                          + (m.getContextMark().getLine() + 1)
                          + ", column "
                          + (m.getContextMark().getColumn() + 1))
                  + ")";
      return new SyntaxException(oneLine(problem + context), at.getLine() + 1, at.getColumn() + 1);
    }
    JsonLocation at = e.getLocation();
    return new SyntaxException(
        oneLine(e.getOriginalMessage()), at == null ? 0 : line(at), at == null ? 0 : column(at));
  }

  private static String oneLine(String s) {
    return s == null ? "invalid YAML" : s.strip().replaceAll("\\s*\\R\\s*", " ");
  }

  private static int line(JsonLocation l) {
    return Math.max(l.getLineNr(), 0);
  }

  private static int column(JsonLocation l) {
    return Math.max(l.getColumnNr(), 0);
  }
}
