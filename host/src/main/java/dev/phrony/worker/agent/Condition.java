package dev.phrony.worker.agent;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * A policy's {@code spec.conditions} tree, evaluated against a call's arguments as the runtime's
 * {@code internal/policy/condition_tree.go} does: {@code all}, {@code any} and {@code not} nodes,
 * and leaves {@code {field, op, value}} whose field is a dotted path into the arguments. A leaf
 * whose field is missing does not match; numbers compare as numbers (a numeric string too), other
 * values as trimmed text without regard to case.
 *
 * <p>Where the runtime would quietly never match (an unknown operator, a bad pattern, a node of
 * none of the four forms), {@link #parse} refuses the tree instead, naming the field.
 */
public sealed interface Condition {

  /** Whether the arguments (a JSON object) satisfy it. */
  boolean matches(JsonNode args);

  /** Every child matches (an empty list matches). */
  record All(List<Condition> children) implements Condition {
    @Override
    public boolean matches(JsonNode args) {
      return children.stream().allMatch(c -> c.matches(args));
    }
  }

  /** Some child matches (an empty list does not). */
  record Any(List<Condition> children) implements Condition {
    @Override
    public boolean matches(JsonNode args) {
      return children.stream().anyMatch(c -> c.matches(args));
    }
  }

  /** The child does not match. */
  record Not(Condition child) implements Condition {
    @Override
    public boolean matches(JsonNode args) {
      return !child.matches(args);
    }
  }

  /** {@code field op value}. */
  record Leaf(String field, Op op, JsonNode value, Optional<Pattern> pattern) implements Condition {
    @Override
    public boolean matches(JsonNode args) {
      JsonNode actual = args;
      for (String part : field.split("\\.")) {
        if (part.isBlank()) {
          continue;
        }
        if (actual == null || !actual.isObject()) {
          return false;
        }
        actual = actual.get(part.strip());
      }
      if (actual == null) {
        return false;
      }
      return switch (op) {
        case EQ -> equal(actual, value);
        case NEQ -> !equal(actual, value);
        case GT -> numeric(actual, value, (a, b) -> a > b);
        case GTE -> numeric(actual, value, (a, b) -> a >= b);
        case LT -> numeric(actual, value, (a, b) -> a < b);
        case LTE -> numeric(actual, value, (a, b) -> a <= b);
        case IN -> {
          for (JsonNode item : value) {
            if (equal(actual, item)) {
              yield true;
            }
          }
          yield false;
        }
        case MATCHES -> pattern.orElseThrow().matcher(text(actual)).find();
      };
    }
  }

  /** The operators the runtime knows, by every name it accepts. */
  enum Op {
    EQ("eq", "=="),
    NEQ("neq", "!="),
    GT("gt", ">"),
    GTE("gte", ">="),
    LT("lt", "<"),
    LTE("lte", "<="),
    IN("in"),
    MATCHES("matches");

    private final List<String> names;

    Op(String... names) {
      this.names = List.of(names);
    }

    static Optional<Op> named(String name) {
      String n = name.strip().toLowerCase(Locale.ROOT);
      if (n.isEmpty()) {
        return Optional.of(EQ);
      }
      for (Op op : values()) {
        if (op.names.contains(n)) {
          return Optional.of(op);
        }
      }
      return Optional.empty();
    }

    static String all() {
      List<String> out = new ArrayList<>();
      for (Op op : values()) {
        out.addAll(op.names);
      }
      return String.join(", ", out);
    }
  }

  /**
   * Reads a tree.
   *
   * @param where the place to name in errors, e.g. {@code FILE:LINE: spec.conditions}
   * @throws AgentLoadException for a tree the runtime would not evaluate as written
   */
  static Condition parse(JsonNode node, String where) {
    if (!node.isObject()) {
      throw new AgentLoadException(where + ": write a mapping ({field, op, value}, all, any, not)");
    }
    if (node.has("all") || node.has("any")) {
      String key = node.has("all") ? "all" : "any";
      JsonNode items = node.get(key);
      if (!items.isArray()) {
        throw new AgentLoadException(where + "." + key + ": write a list of conditions");
      }
      List<Condition> children = new ArrayList<>();
      for (int i = 0; i < items.size(); i++) {
        children.add(parse(items.get(i), where + "." + key + "[" + i + "]"));
      }
      return key.equals("all") ? new All(children) : new Any(children);
    }
    if (node.has("not")) {
      return new Not(parse(node.get("not"), where + ".not"));
    }
    String field = node.path("field").asText("").strip();
    if (field.isEmpty()) {
      throw new AgentLoadException(
          where
              + ": a condition needs a field (or all, any, not): e.g. {field: amount, op: gt,"
              + " value: 1000}");
    }
    if (field.equals("phrony.dispatch.trigger") || field.equals("dispatch.outcome")) {
      throw new AgentLoadException(
          where
              + ".field: "
              + field
              + " conditions escalate dispatch failures to a human; dev does not: run the"
              + " scenario against the runtime, or leave this policy out");
    }
    String opName = node.path("op").asText("");
    Op op =
        Op.named(opName)
            .orElseThrow(
                () ->
                    new AgentLoadException(
                        where
                            + ".op: unknown operator \""
                            + opName
                            + "\" (the runtime's are "
                            + Op.all()
                            + ")"));
    JsonNode value = node.path("value");
    Optional<Pattern> pattern = Optional.empty();
    if (op == Op.IN && !value.isArray()) {
      throw new AgentLoadException(where + ".value: op in needs a list of values");
    }
    if (op == Op.MATCHES) {
      if (!value.isTextual()) {
        throw new AgentLoadException(where + ".value: op matches needs a pattern (a string)");
      }
      try {
        pattern = Optional.of(Pattern.compile(value.asText()));
      } catch (PatternSyntaxException e) {
        throw new AgentLoadException(
            where + ".value: not a pattern: " + e.getDescription() + " in " + value.asText());
      }
    }
    return new Leaf(field, op, value, pattern);
  }

  private static boolean equal(JsonNode actual, JsonNode expected) {
    Optional<Double> a = number(actual);
    Optional<Double> b = number(expected);
    if (a.isPresent() && b.isPresent()) {
      return a.get().doubleValue() == b.get().doubleValue();
    }
    return text(actual).equalsIgnoreCase(text(expected));
  }

  /** A comparison of two numbers. */
  interface Comparison {
    boolean test(double a, double b);
  }

  /** False unless both are numbers (or numeric strings). */
  private static boolean numeric(JsonNode actual, JsonNode expected, Comparison c) {
    Optional<Double> a = number(actual);
    Optional<Double> b = number(expected);
    return a.isPresent() && b.isPresent() && c.test(a.get(), b.get());
  }

  private static Optional<Double> number(JsonNode n) {
    if (n.isNumber()) {
      return Optional.of(n.doubleValue());
    }
    if (n.isTextual()) {
      try {
        return Optional.of(Double.parseDouble(n.asText().strip()));
      } catch (NumberFormatException e) {
        return Optional.empty();
      }
    }
    return Optional.empty();
  }

  private static String text(JsonNode n) {
    if (n.isNumber()) {
      return AgentJson.number(n.doubleValue());
    }
    return n.isValueNode() ? n.asText().strip() : n.toString();
  }
}
