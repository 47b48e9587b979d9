package dev.phrony.worker.plugin;

import dev.phrony.worker.TextColumns;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.api.ToolDescriptor;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link LoadResult} as people read it (a table) and as programs read it (JSON): what would be
 * advertised, every problem, and the image digest.
 */
public final class LoadReport {
  private static final ObjectMapper JSON =
      JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();
  private static final List<String> HEADER =
      List.of("KEY", "CONTRACT", "CONCURRENCY", "SIDE EFFECT", "PLUGIN", "HASH");
  private static final int SHORT_HASH = 12;

  private LoadReport() {}

  /**
   * One row per handler (key, contract version, max concurrency, side-effect class, plugin,
   * first 12 hex digits of the descriptor hash), then each problem, then the image digest.
   */
  public static String table(LoadResult result) {
    StringBuilder out = new StringBuilder();
    List<HandlerCatalog.Entry> entries = result.catalog().entries();
    if (entries.isEmpty()) {
      out.append("no handlers\n");
    } else {
      List<List<String>> rows = new ArrayList<>();
      rows.add(HEADER);
      for (HandlerCatalog.Entry e : entries) {
        ToolDescriptor d = e.descriptor();
        rows.add(List.of(e.key(), d.contractVersion(), Integer.toString(d.maxConcurrency()),
            d.sideEffectClass().wireName(), e.plugin(), shortHash(e.descriptorHash())));
      }
      TextColumns.append(out, rows);
    }
    List<LoadProblem> problems = result.problems();
    if (!problems.isEmpty()) {
      out.append('\n').append(problems.size() == 1 ? "1 problem" : problems.size() + " problems")
          .append(":\n");
      problems.forEach(p -> out.append("  ").append(p.plugin()).append(": ").append(p.reason())
          .append('\n'));
    }
    return out.append('\n').append("image digest: ").append(result.imageDigest()).append('\n')
        .toString();
  }

  /**
   * {@code {"handlers":[{"key","tool","version","contract_version","max_concurrency",
   * "side_effect_class","descriptor_hash","plugin"}...],"problems":[{"plugin","reason"}...],
   * "image_digest":"sha256:..."}}.
   */
  public static String json(LoadResult result) {
    ObjectNode root = JSON.createObjectNode();
    ArrayNode handlers = root.putArray("handlers");
    for (HandlerCatalog.Entry e : result.catalog().entries()) {
      ToolDescriptor d = e.descriptor();
      handlers.addObject()
          .put("key", e.key())
          .put("tool", d.tool())
          .put("version", d.version())
          .put("contract_version", d.contractVersion())
          .put("max_concurrency", d.maxConcurrency())
          .put("side_effect_class", d.sideEffectClass().wireName())
          .put("descriptor_hash", e.descriptorHash())
          .put("plugin", e.plugin());
    }
    ArrayNode problems = root.putArray("problems");
    result.problems().forEach(p -> problems.addObject()
        .put("plugin", p.plugin())
        .put("reason", p.reason()));
    root.put("image_digest", result.imageDigest());
    try {
      return JSON.writeValueAsString(root) + "\n";
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a tree of strings and numbers always serializes", e);
    }
  }

  private static String shortHash(String hash) {
    String hex = hash.startsWith("sha256:") ? hash.substring("sha256:".length()) : hash;
    return hex.substring(0, Math.min(SHORT_HASH, hex.length()));
  }
}
