package dev.phrony.worker.contract;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.phrony.worker.HostJson;
import dev.phrony.worker.api.ToolDescriptor;
import java.io.IOException;

/**
 * The {@code kind: Tool} document of a served handler, as the runtime's bundle {@code tools/}
 * expects it: {@code metadata} (namespace and name from the handler's tool, its version), {@code
 * spec.description}, {@code spec.side_effect_class} and {@code spec.input_schema.inline} (the
 * schema the worker checks calls against, generated from a typed handler's record when it gives
 * none). A plugin's contract is so published from its code.
 */
public final class ToolManifest {
  private static final ObjectMapper YAML =
      new YAMLMapper(
          YAMLFactory.builder()
              .disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER)
              .enable(YAMLGenerator.Feature.MINIMIZE_QUOTES)
              .enable(YAMLGenerator.Feature.ALWAYS_QUOTE_NUMBERS_AS_STRINGS)
              .enable(YAMLGenerator.Feature.INDENT_ARRAYS_WITH_INDICATOR)
              .build());
  private static final ObjectMapper JSON = HostJson.MAPPER;

  private ToolManifest() {}

  /**
   * The document of {@code d}.
   *
   * @throws IllegalArgumentException when its tool is not {@code namespace.name} (no Tool document
   *     can name it), naming how such a tool is bound instead
   */
  public static ObjectNode document(ToolDescriptor d) {
    Resolver.LogicalRef ref =
        Resolver.LogicalRef.parse(d.tool())
            .filter(r -> r.constraint().isEmpty())
            .orElseThrow(
                () ->
                    new IllegalArgumentException(
                        "the tool "
                            + d.tool()
                            + " is not of the form namespace.name, so no Tool document of"
                            + " tools/ can name it: a binding 'ref: "
                            + d.tool()
                            + "' (no constraint) is routed to "
                            + d.tool()
                            + "@default without one"));
    ObjectNode root = JSON.createObjectNode();
    root.put("apiVersion", Bundle.API_VERSION);
    root.put("kind", ToolDocument.KIND);
    ObjectNode metadata = root.putObject("metadata");
    metadata.put("name", ref.name());
    metadata.put("namespace", ref.namespace());
    metadata.put("version", d.version());
    ObjectNode spec = root.putObject("spec");
    if (!d.description().isEmpty()) {
      spec.put("description", d.description());
    }
    spec.put("side_effect_class", d.sideEffectClass().wireName());
    if (d.inputSchema().isPresent()) {
      try {
        JsonNode schema = JSON.readTree(d.inputSchema().get());
        spec.putObject("input_schema").set("inline", schema);
      } catch (IOException e) {
        throw new IllegalArgumentException("the handler's input schema is not JSON: " + e, e);
      }
    }
    return root;
  }

  /** The document as YAML, for {@code tools/NAMESPACE.NAME.yaml}. */
  public static String yaml(ToolDescriptor d) {
    return write(YAML, document(d));
  }

  /** The document as JSON (the runtime reads a JSON document as the YAML it is). */
  public static String json(ToolDescriptor d) {
    return write(JSON.copy().enable(SerializationFeature.INDENT_OUTPUT), document(d)) + "\n";
  }

  private static String write(ObjectMapper m, JsonNode n) {
    try {
      return m.writeValueAsString(n);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a tree of strings and numbers always serializes", e);
    }
  }
}
