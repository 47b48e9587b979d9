package dev.phrony.worker.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.HostJson;
import dev.phrony.worker.TextColumns;
import dev.phrony.worker.UserErrorException;
import dev.phrony.worker.api.AsyncToolHandler;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.config.DurationParser;
import dev.phrony.worker.config.HandlerOverrides;
import dev.phrony.worker.config.Source;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.plugin.LoadResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A {@link LoadResult} as people read it (a table) and as programs read it (JSON): what would be
 * advertised, every problem, and the image digest.
 */
final class LoadReport {
  private static final ObjectMapper JSON = HostJson.MAPPER;
  private static final List<String> HEADER =
      List.of("KEY", "CONTRACT", "CONCURRENCY", "SIDE EFFECT", "PLUGIN", "HASH");
  private static final int SHORT_HASH = 12;

  private LoadReport() {}

  /**
   * One row per handler (key, contract version, max concurrency, side-effect class, plugin, first
   * 12 hex digits of the descriptor hash), then each problem, then the image digest.
   */
  static String table(LoadResult result) {
    return table(result, Map.of(), List.of());
  }

  /**
   * The same, with an operator's settings per handler: the concurrency is the effective one (marked
   * {@code *} when set by the operator), disabled handlers say so, and every setting over a
   * plugin's value is listed with where it came from, then each rule matching nothing.
   */
  static String table(
      LoadResult result, Map<String, HandlerOverrides.Effective> effective, List<String> warnings) {
    return table(tree(json(result, effective, warnings)));
  }

  /**
   * The table of a load's {@link #json}, or of a running worker's {@code /handlers} (the same JSON,
   * whose generation is then shown too): one rendering, so both read alike.
   */
  static String table(JsonNode root) {
    StringBuilder out = new StringBuilder();
    JsonNode handlers = root.path("handlers");
    if (handlers.isEmpty()) {
      out.append("no handlers\n");
    } else {
      List<List<String>> rows = new ArrayList<>();
      rows.add(HEADER);
      for (JsonNode h : handlers) {
        String concurrency =
            !h.path("enabled").asBoolean(true)
                ? "disabled"
                : h.path("max_concurrency").asText()
                    + (isSet(h.path("settings").path("max_concurrency")) ? "*" : "");
        rows.add(
            List.of(
                h.path("key").asText(),
                h.path("contract_version").asText(),
                concurrency,
                h.path("side_effect_class").asText(),
                h.path("plugin").asText(),
                shortHash(h.path("descriptor_hash").asText())));
      }
      TextColumns.append(out, rows);
    }
    List<String> set = new ArrayList<>();
    for (JsonNode h : handlers) {
      JsonNode settings = h.path("settings");
      String key = h.path("key").asText();
      setLine(set, key, "max-concurrency", settings.path("max_concurrency"));
      setLine(set, key, "enabled", settings.path("enabled"));
      setLine(set, key, "deadline", settings.path("deadline"));
    }
    if (!set.isEmpty()) {
      out.append("\nset by the operator:\n");
      set.forEach(l -> out.append("  ").append(l).append('\n'));
    }
    JsonNode warnings = root.path("warnings");
    if (!warnings.isEmpty()) {
      out.append('\n');
      warnings.forEach(w -> out.append("warning: ").append(w.asText()).append('\n'));
    }
    JsonNode problems = root.path("problems");
    if (!problems.isEmpty()) {
      out.append('\n')
          .append(problems.size() == 1 ? "1 problem" : problems.size() + " problems")
          .append(":\n");
      problems.forEach(
          p ->
              out.append("  ")
                  .append(p.path("plugin").asText())
                  .append(": ")
                  .append(p.path("reason").asText())
                  .append('\n'));
    }
    out.append('\n');
    if (root.has("generation")) {
      out.append("generation ")
          .append(root.path("generation").asText())
          .append(", loaded at ")
          .append(root.path("loaded_at").asText())
          .append('\n');
    }
    return out.append("image digest: ")
        .append(root.path("image_digest").asText())
        .append('\n')
        .toString();
  }

  /** {@code key: setting value (source from)} for a setting the operator set. */
  private static void setLine(List<String> lines, String key, String name, JsonNode setting) {
    if (isSet(setting)) {
      JsonNode value = setting.path("value");
      lines.add(
          key
              + ": "
              + name
              + " "
              + (value.isNull() ? "none" : value.asText())
              + " ("
              + setting.path("source").asText()
              + " "
              + setting.path("from").asText()
              + ")");
    }
  }

  /** A setting of {@link #json}'s {@code settings} that is not the plugin's own value. */
  private static boolean isSet(JsonNode setting) {
    return setting.isObject() && !setting.path("source").asText("plugin").equals("plugin");
  }

  /** Parses JSON this class wrote, or a worker's answer ({@link UserErrorException} otherwise). */
  static JsonNode tree(String json) {
    try {
      return JSON.readTree(json);
    } catch (JsonProcessingException e) {
      throw new UserErrorException(
          "the answer is not JSON ("
              + e.getOriginalMessage()
              + "): is it a phrony-worker 'run' endpoint or a 'dev' control address?",
          e);
    }
  }

  /**
   * {@code {"handlers":[{"key","tool","version","contract_version","max_concurrency",
   * "side_effect_class","execution","descriptor_hash","plugin"}...],"problems":[{"plugin","reason"}...],
   * "image_digest":"sha256:..."}}.
   */
  static String json(LoadResult result) {
    return json(result, Map.of(), List.of());
  }

  /**
   * The same, with an operator's settings: {@code max_concurrency} and {@code enabled} are the
   * effective values, {@code settings} says for each where it came from, and {@code warnings} lists
   * the rules that match no handler.
   */
  static String json(
      LoadResult result, Map<String, HandlerOverrides.Effective> effective, List<String> warnings) {
    ObjectNode root = JSON.createObjectNode();
    ArrayNode handlers = root.putArray("handlers");
    for (HandlerCatalog.Entry e : result.catalog().entries()) {
      ToolDescriptor d = e.descriptor();
      HandlerOverrides.Effective eff = effective.get(e.key());
      ObjectNode h =
          handlers
              .addObject()
              .put("key", e.key())
              .put("tool", d.tool())
              .put("version", d.version())
              .put("contract_version", d.contractVersion())
              .put("max_concurrency", eff == null ? d.maxConcurrency() : eff.maxConcurrency())
              .put("enabled", eff == null || eff.enabled())
              .put("side_effect_class", d.sideEffectClass().wireName())
              // async: an AsyncToolHandler, started on the stream's I/O thread; thread: its own
              .put("execution", e.handler() instanceof AsyncToolHandler ? "async" : "thread")
              .put("descriptor_hash", e.descriptorHash())
              .put("plugin", e.plugin());
      if (eff != null) {
        ObjectNode settings = h.putObject("settings");
        setting(settings, "max_concurrency", eff.maxConcurrency(), eff.maxConcurrencySource());
        setting(settings, "enabled", eff.enabled(), eff.enabledSource());
        setting(
            settings,
            "deadline",
            eff.deadline().map(DurationParser::format).orElse(null),
            eff.deadlineSource());
      }
    }
    ArrayNode warned = root.putArray("warnings");
    warnings.forEach(warned::add);
    ArrayNode problems = root.putArray("problems");
    result
        .problems()
        .forEach(p -> problems.addObject().put("plugin", p.plugin()).put("reason", p.reason()));
    root.put("image_digest", result.imageDigest());
    try {
      return JSON.writeValueAsString(root) + "\n";
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a tree of strings and numbers always serializes", e);
    }
  }

  private static boolean isSet(Source source) {
    return source.kind() != Source.Kind.DEFAULT;
  }

  private static void setting(ObjectNode settings, String name, Object value, Source source) {
    ObjectNode n = settings.putObject(name);
    n.putPOJO("value", value);
    n.put("source", source.kind() == Source.Kind.DEFAULT ? "plugin" : source.kind().label());
    if (isSet(source)) {
      n.put("from", source.origin());
    }
  }

  private static String shortHash(String hash) {
    String hex = hash.startsWith("sha256:") ? hash.substring("sha256:".length()) : hash;
    return hex.substring(0, Math.min(SHORT_HASH, hex.length()));
  }
}
