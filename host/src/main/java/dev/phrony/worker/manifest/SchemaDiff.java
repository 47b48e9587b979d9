package dev.phrony.worker.manifest;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Where the input schema a manifest gives the model and the one a handler checks calls against
 * disagree. An {@link Severity#ERROR} is a call the model may well make that the handler refuses: a
 * property the handler requires and the manifest does not, a type the manifest allows and the
 * handler does not, a property the manifest offers that the handler forbids ({@code
 * additionalProperties: false}). A {@link Severity#WARNING} is a rule only the handler has (a
 * pattern, a bound, an enum...): the runtime does not pass it to the model, so some calls may fail.
 * A handler that accepts more than the manifest offers is no finding.
 */
final class SchemaDiff {
  private static final List<String> LOWER_BOUNDS =
      List.of("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties");
  private static final List<String> UPPER_BOUNDS =
      List.of("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties");
  private static final List<String> EXACT = List.of("pattern", "format", "multipleOf", "const");

  /** Whether a finding fails calls. */
  enum Severity {
    ERROR,
    WARNING
  }

  /**
   * One disagreement.
   *
   * @param severity error or warning
   * @param pointer the JSON pointer of the place in both schemas, e.g. {@code /properties/amount}
   * @param message what differs, with both sides
   */
  record Finding(Severity severity, String pointer, String message) {
    String text() {
      return (pointer.isEmpty() ? "/" : pointer) + ": " + message;
    }
  }

  private final JsonNode manifestRoot;
  private final JsonNode handlerRoot;
  private final List<Finding> findings = new ArrayList<>();

  private SchemaDiff(JsonNode manifestRoot, JsonNode handlerRoot) {
    this.manifestRoot = manifestRoot;
    this.handlerRoot = handlerRoot;
  }

  /** The findings for a manifest's schema against a handler's, errors first. */
  static List<Finding> compare(JsonNode manifest, JsonNode handler) {
    SchemaDiff d = new SchemaDiff(manifest, handler);
    d.walk(manifest, handler, "", 0);
    List<Finding> out = new ArrayList<>();
    d.findings.stream().filter(f -> f.severity() == Severity.ERROR).forEach(out::add);
    d.findings.stream().filter(f -> f.severity() == Severity.WARNING).forEach(out::add);
    return out;
  }

  private void walk(JsonNode m, JsonNode h, String at, int depth) {
    m = deref(m, manifestRoot);
    h = deref(h, handlerRoot);
    if (depth > 32 || !m.isObject() || !h.isObject()) {
      return; // a boolean schema or a cycle: nothing worth saying
    }
    types(m, h, at);
    objects(m, h, at, depth);
    if (m.has("items") && h.has("items")) {
      walk(m.get("items"), h.get("items"), at + "/items", depth + 1);
    }
    rules(m, h, at);
  }

  private void types(JsonNode m, JsonNode h, String at) {
    Set<String> mt = typeSet(m);
    Set<String> ht = typeSet(h);
    if (ht.isEmpty()) {
      return;
    }
    if (mt.isEmpty()) {
      if (!ht.contains("object") || !at.isEmpty()) {
        warn(at, "the manifest does not say the type; the handler accepts only " + join(ht));
      }
      return;
    }
    List<String> refused =
        mt.stream()
            .filter(t -> !ht.contains(t) && !(t.equals("integer") && ht.contains("number")))
            .toList();
    if (!refused.isEmpty()) {
      error(
          at,
          "type differs: the manifest allows "
              + join(mt)
              + ", the handler accepts only "
              + join(ht)
              + " (a "
              + refused.getFirst()
              + " fails the call)");
    }
  }

  private void objects(JsonNode m, JsonNode h, String at, int depth) {
    JsonNode mp = m.path("properties");
    JsonNode hp = h.path("properties");
    Set<String> mRequired = strings(m.path("required"));
    for (String p : strings(h.path("required"))) {
      if (!mRequired.contains(p)) {
        error(
            at + "/properties/" + escape(p),
            "the handler requires "
                + p
                + ", the manifest "
                + (mp.has(p) ? "leaves it optional" : "does not offer it")
                + ": a call without it fails with invalid_args");
      }
    }
    JsonNode hExtra = h.path("additionalProperties");
    boolean forbidden = hExtra.isBoolean() && !hExtra.asBoolean();
    mp.properties()
        .forEach(
            e -> {
              String p = e.getKey();
              String where = at + "/properties/" + escape(p);
              if (hp.has(p)) {
                walk(e.getValue(), hp.get(p), where, depth + 1);
              } else if (forbidden) {
                error(
                    where,
                    "the manifest offers "
                        + p
                        + ", the handler forbids it (additionalProperties: false): a call with it"
                        + " fails with invalid_args");
              } else if (hExtra.isObject()) {
                walk(e.getValue(), hExtra, where, depth + 1);
              }
            });
    JsonNode mExtra = m.path("additionalProperties");
    boolean manifestClosed = mExtra.isBoolean() && !mExtra.asBoolean();
    if (forbidden && !manifestClosed && (m.has("properties") || typeSet(m).contains("object"))) {
      warn(
          at + "/additionalProperties",
          "the handler forbids properties it does not name (additionalProperties: false), the"
              + " manifest does not: a model that sends another property fails the call");
    }
  }

  private void rules(JsonNode m, JsonNode h, String at) {
    for (String k : LOWER_BOUNDS) {
      bound(m, h, at, k, true);
    }
    for (String k : UPPER_BOUNDS) {
      bound(m, h, at, k, false);
    }
    for (String k : EXACT) {
      if (h.has(k) && !h.get(k).equals(m.get(k))) {
        warn(
            at,
            "the handler's schema has "
                + k
                + " "
                + h.get(k)
                + ", the manifest's "
                + Optional.ofNullable(m.get(k)).map(JsonNode::toString).orElse("none")
                + ": the model is not told, so a call may fail");
      }
    }
    if (h.path("enum").isArray()) {
      Set<JsonNode> allowed = new LinkedHashSet<>();
      h.get("enum").forEach(allowed::add);
      boolean within =
          m.path("enum").isArray() && m.get("enum").valueStream().allMatch(allowed::contains);
      if (!within) {
        warn(
            at,
            "the handler accepts only "
                + h.get("enum")
                + ", the manifest "
                + (m.has("enum") ? "allows " + m.get("enum") : "any value")
                + ": a value outside fails the call");
      }
    }
  }

  private void bound(JsonNode m, JsonNode h, String at, String k, boolean lower) {
    if (!h.path(k).isNumber()) {
      return;
    }
    BigDecimal hv = h.get(k).decimalValue();
    Optional<BigDecimal> mv =
        m.path(k).isNumber() ? Optional.of(m.get(k).decimalValue()) : Optional.empty();
    boolean stricter = mv.map(v -> lower ? hv.compareTo(v) > 0 : hv.compareTo(v) < 0).orElse(true);
    if (stricter) {
      warn(
          at,
          "the handler's schema has "
              + k
              + " "
              + h.get(k)
              + ", the manifest's "
              + mv.map(BigDecimal::toPlainString).orElse("none")
              + ": the model is not told, so a call may fail");
    }
  }

  /** A local {@code $ref} ({@code #/$defs/X}) followed; anything else as it is. */
  private static JsonNode deref(JsonNode node, JsonNode root) {
    for (int i = 0; i < 16 && node.isObject() && node.path("$ref").isTextual(); i++) {
      String ref = node.get("$ref").asText();
      if (!ref.startsWith("#")) {
        return node;
      }
      JsonNode target = root.at(ref.substring(1));
      if (target.isMissingNode()) {
        return node;
      }
      node = target;
    }
    return node;
  }

  private static Set<String> typeSet(JsonNode s) {
    Set<String> out = new LinkedHashSet<>();
    JsonNode t = s.path("type");
    if (t.isTextual()) {
      out.add(t.asText());
    } else if (t.isArray()) {
      t.forEach(x -> out.add(x.asText()));
    }
    return out;
  }

  private static Set<String> strings(JsonNode array) {
    Set<String> out = new LinkedHashSet<>();
    if (array.isArray()) {
      array.forEach(x -> out.add(x.asText()));
    }
    return out;
  }

  private static String join(Set<String> types) {
    return String.join(" or ", types);
  }

  /** RFC 6901: {@code ~} and {@code /} in a property name. */
  private static String escape(String p) {
    return p.replace("~", "~0").replace("/", "~1");
  }

  private void error(String at, String message) {
    findings.add(new Finding(Severity.ERROR, at, message));
  }

  private void warn(String at, String message) {
    findings.add(new Finding(Severity.WARNING, at, message));
  }
}
