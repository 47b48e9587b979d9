package dev.phrony.worker.dev;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.core.util.Separators;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectWriter;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.SyntaxException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;

/**
 * JSON for the control API and the {@code call} command. Numbers keep their exact text (no rounding
 * through {@code double}, no trailing zeros dropped), so a payload printed by {@code call} reads as
 * the handler wrote it; pretty output looks like {@code jq}'s.
 */
final class Json {
  static final ObjectMapper MAPPER =
      JsonMapper.builder()
          .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
          .disable(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES)
          .build();

  private static final ObjectWriter PRETTY = MAPPER.writer(prettyPrinter());

  private Json() {}

  /** Two-space indents, {@code "key": value}, arrays one element a line, {@code {}} when empty. */
  private static DefaultPrettyPrinter prettyPrinter() {
    DefaultIndenter indenter = new DefaultIndenter("  ", "\n");
    DefaultPrettyPrinter p =
        new DefaultPrettyPrinter()
            .withSeparators(
                Separators.createDefaultInstance()
                    .withObjectFieldValueSpacing(Separators.Spacing.AFTER)
                    .withObjectEmptySeparator("")
                    .withArrayEmptySeparator(""));
    p.indentObjectsWith(indenter);
    p.indentArraysWith(indenter);
    return p;
  }

  static ObjectNode object() {
    return MAPPER.createObjectNode();
  }

  /** {@code node} pretty-printed, without a final newline. */
  static String pretty(JsonNode node) {
    try {
      return PRETTY.writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e); // a tree always serialises
    }
  }

  /** {@code node} as compact UTF-8. */
  static byte[] bytes(JsonNode node) {
    try {
      return MAPPER.writeValueAsBytes(node);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Parses UTF-8 bytes holding exactly one JSON value. */
  static JsonNode parse(byte[] utf8) {
    return parse(new String(utf8, StandardCharsets.UTF_8));
  }

  /**
   * Parses text holding exactly one JSON value (whitespace around it is fine).
   *
   * @throws SyntaxException saying what is wrong and where (line and column, from 1)
   */
  static JsonNode parse(String text) {
    try (JsonParser p = MAPPER.createParser(text)) {
      JsonNode node = MAPPER.readTree(p);
      if (node == null || node.isMissingNode()) {
        throw new SyntaxException("no JSON value (the text is empty)", 1, 1);
      }
      if (p.nextToken() != null) {
        JsonLocation at = p.currentTokenLocation();
        throw new SyntaxException(
            "more text after the JSON value", at.getLineNr(), at.getColumnNr());
      }
      return node;
    } catch (JsonProcessingException e) {
      JsonLocation at = e.getLocation();
      throw new SyntaxException(
          firstLine(e.getOriginalMessage()),
          at == null ? 1 : Math.max(1, at.getLineNr()),
          at == null ? 1 : Math.max(1, at.getColumnNr()));
    } catch (IOException e) {
      throw new UncheckedIOException(e); // reading a String does no I/O
    }
  }

  /** True if {@code utf8} holds exactly one JSON value. */
  static boolean isJson(byte[] utf8) {
    try {
      parse(utf8);
      return true;
    } catch (SyntaxException e) {
      return false;
    }
  }

  /** Jackson's "(start marker at [Source: ...; line: 1, column: 1])": noise for a reader. */
  private static final Pattern SOURCE =
      Pattern.compile("\\s*\\(start marker at \\[Source:[^]]*]\\)");

  /** Jackson adds hints on further lines; the first says what is wrong. */
  private static String firstLine(String s) {
    if (s == null || s.isBlank()) {
      return "not JSON";
    }
    int nl = s.indexOf('\n');
    return SOURCE.matcher(nl < 0 ? s : s.substring(0, nl)).replaceAll("").strip();
  }
}
