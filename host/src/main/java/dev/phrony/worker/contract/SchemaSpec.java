package dev.phrony.worker.contract;

import com.fasterxml.jackson.databind.JsonNode;
import dev.phrony.worker.contract.YamlFile.DocumentException;
import dev.phrony.worker.contract.YamlTree.Mapping;
import dev.phrony.worker.contract.YamlTree.Node;
import java.util.Optional;

/**
 * An {@code input_schema} as written: a JSON Schema {@code inline}, or a {@code ref} to a file of
 * the bundle ({@code schemas/payment-input} finds {@code schemas/payment-input.json}; with a {@code
 * version}, {@code REF-VERSION.json}, {@code REF/VERSION.json} or {@code REF/vVERSION.json}).
 *
 * @param inline the schema written in place
 * @param ref the bundle-relative file it names
 * @param version the version that picks among the ref's files
 * @param line where it is written
 */
public record SchemaSpec(
    Optional<JsonNode> inline, Optional<String> ref, Optional<String> version, int line) {

  /** Reads {@code parent.key}; empty when absent. */
  static Optional<SchemaSpec> read(Mapping parent, String key, String path)
      throws DocumentException {
    Optional<Mapping> m = YamlFile.mapping(parent, key, path);
    if (m.isEmpty()) {
      return Optional.empty();
    }
    Node inline = m.get().get("inline");
    Optional<JsonNode> json =
        YamlFile.absent(inline) ? Optional.empty() : Optional.of(YamlTree.toJson(inline));
    if (json.isPresent() && !json.get().isObject()) {
      throw new DocumentException(
          inline.line(), path + ".inline is not a mapping", "write the JSON Schema as a mapping");
    }
    return Optional.of(
        new SchemaSpec(
            json.filter(j -> !j.isEmpty()),
            YamlFile.text(m.get(), "ref", path + ".ref"),
            YamlFile.text(m.get(), "version", path + ".version"),
            m.get().line()));
  }
}
