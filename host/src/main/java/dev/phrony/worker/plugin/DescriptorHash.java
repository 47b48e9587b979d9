package dev.phrony.worker.plugin;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.api.ToolDescriptor;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * {@code descriptor_hash}: {@code sha256:} + hex of a canonical encoding of what a handler promises
 * (tool, version, contract version, side-effect class, input schema). Stable across runs and
 * machines: the encoding is JSON with sorted keys and no whitespace, and the schema is re-encoded
 * the same way so its formatting does not matter. Description and max concurrency are deliberately
 * left out: they change nothing a caller relies on.
 */
public final class DescriptorHash {
  private static final ObjectMapper CANONICAL =
      JsonMapper.builder()
          .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS)
          .nodeFactory(new com.fasterxml.jackson.databind.node.JsonNodeFactory(true))
          .build();

  private DescriptorHash() {}

  /**
   * @throws IllegalArgumentException when the input schema is not JSON
   */
  public static String of(ToolDescriptor d) {
    ObjectNode root = CANONICAL.createObjectNode();
    root.put("contract_version", d.contractVersion());
    if (d.inputSchema().isPresent()) {
      root.set("input_schema", parseSchema(d.inputSchema().get()));
    }
    root.put(
        "side_effect_class", d.sideEffectClass() == null ? "" : d.sideEffectClass().wireName());
    root.put("tool", d.tool());
    root.put("version", d.version());
    try {
      byte[] canonical = CANONICAL.writeValueAsBytes(sorted(root));
      return "sha256:"
          + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(canonical));
    } catch (JsonProcessingException | NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static JsonNode parseSchema(String schema) {
    try {
      return CANONICAL.readTree(schema);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(
          "input schema is not valid JSON: " + e.getOriginalMessage(), e);
    }
  }

  /** Object keys sorted at every depth (ORDER_MAP_ENTRIES_BY_KEYS does not reach tree nodes). */
  private static Object sorted(JsonNode node) {
    if (node.isObject()) {
      var map = new java.util.TreeMap<String, Object>();
      node.properties().forEach(e -> map.put(e.getKey(), sorted(e.getValue())));
      return map;
    }
    if (node.isArray()) {
      var list = new java.util.ArrayList<Object>(node.size());
      node.forEach(n -> list.add(sorted(n)));
      return list;
    }
    return node;
  }
}
