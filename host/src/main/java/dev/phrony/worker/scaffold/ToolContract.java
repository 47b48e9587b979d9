package dev.phrony.worker.scaffold;

import com.fasterxml.jackson.databind.JsonNode;
import dev.phrony.worker.contract.ToolDocument;
import java.nio.file.Path;
import java.util.Optional;

/**
 * What a plugin project takes from a {@code kind: Tool} document: the class, the description and
 * the input schema its handler is served with, and the document it came from.
 *
 * @param sideEffectClass {@code spec.side_effect_class}
 * @param description {@code spec.description}
 * @param inputSchema {@code spec.input_schema}, resolved
 * @param source the document's file
 */
public record ToolContract(
    String sideEffectClass, String description, Optional<JsonNode> inputSchema, Path source) {

  /** The contract of a loaded Tool document. */
  public static ToolContract of(ToolDocument.Loaded tool) {
    ToolDocument d = tool.document();
    return new ToolContract(
        d.sideEffectClass().orElse("read_only"),
        d.description().orElse(""),
        tool.inputSchema(),
        d.file());
  }
}
