package dev.phrony.worker.contract;

import dev.phrony.worker.contract.YamlFile.DocumentException;
import dev.phrony.worker.contract.YamlTree.Mapping;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A {@code kind: Tool} document of a bundle's {@code tools/}: the contract a binding's ref names
 * ({@code metadata.namespace + "." + metadata.name}), whose version, side-effect class,
 * description, input schema and default policies fill what the binding leaves unset.
 *
 * @param file where it is
 * @param line where the document starts
 * @param apiVersion {@code apiVersion}
 * @param namespace {@code metadata.namespace}
 * @param name {@code metadata.name}
 * @param version {@code metadata.version}
 * @param versionLine its line
 * @param description {@code spec.description}
 * @param sideEffectClass {@code spec.side_effect_class}
 * @param sideEffectClassLine its line
 * @param inputSchema {@code spec.input_schema}
 * @param defaultPolicies {@code spec.default_policies}
 */
public record ToolDocument(
    Path file,
    int line,
    String apiVersion,
    String namespace,
    String name,
    Optional<String> version,
    int versionLine,
    Optional<String> description,
    Optional<String> sideEffectClass,
    int sideEffectClassLine,
    Optional<SchemaSpec> inputSchema,
    List<PolicyAttachment> defaultPolicies) {

  public static final String KIND = "Tool";

  public ToolDocument {
    defaultPolicies = List.copyOf(defaultPolicies);
  }

  /** {@code namespace.name}: the id a ref names it by; empty if either is missing. */
  public String id() {
    return namespace.isEmpty() || name.isEmpty() ? "" : namespace + "." + name;
  }

  /**
   * The Tool document in {@code file} and its input schema, resolved against the bundle it is in
   * (the folder above {@code tools/}, or its own folder).
   *
   * @throws ManifestException when it cannot be read, is not a {@code kind: Tool}, or its schema
   *     cannot be resolved
   */
  public static Loaded load(Path file) {
    YamlFile yaml;
    ToolDocument doc;
    try {
      yaml = YamlFile.read(file);
      if (!yaml.kind().equals(Optional.of(KIND))) {
        throw new ManifestException(
            file,
            YamlFile.line(yaml.root(), "kind"),
            "Tool manifest "
                + Contracts.shown(file)
                + ": its first document is not kind: Tool: pass a tools/ document (phrony-worker"
                + " tool-manifest prints one)",
            null);
      }
      doc = read(yaml);
    } catch (DocumentException e) {
      throw e.manifestException(file);
    }
    if (doc.id().isEmpty()) {
      throw new ManifestException(
          file,
          doc.line(),
          "Tool manifest "
              + Contracts.shown(file)
              + ": metadata.namespace and metadata.name are"
              + " required: name the tool as bindings name it",
          null);
    }
    Path folder = file.toAbsolutePath().normalize().getParent();
    Path root =
        folder.getFileName() != null && folder.getFileName().toString().equals("tools")
            ? folder.getParent()
            : folder;
    Optional<com.fasterxml.jackson.databind.JsonNode> schema = Optional.empty();
    if (doc.inputSchema().isPresent()) {
      Bundle.Schema s =
          Bundle.load(root).schema(doc.inputSchema().get(), file, "spec.input_schema");
      if (s.problem().isPresent()) {
        throw new ManifestException(
            file, s.problem().get().line(), "Tool manifest " + s.problem().get().text(), null);
      }
      schema = s.json();
    }
    return new Loaded(doc, schema);
  }

  /** A Tool document and its input schema, resolved. */
  public record Loaded(
      ToolDocument document, Optional<com.fasterxml.jackson.databind.JsonNode> inputSchema) {}

  /** Reads the first document of {@code yaml}, which must be {@code kind: Tool}. */
  static ToolDocument read(YamlFile yaml) throws DocumentException {
    Mapping root = yaml.root();
    Mapping metadata = YamlFile.mapping(root, "metadata", "metadata").orElse(empty(root));
    Mapping spec = YamlFile.mapping(root, "spec", "spec").orElse(empty(root));
    List<PolicyAttachment> policies = new ArrayList<>();
    var items =
        YamlFile.items(
            spec,
            "default_policies",
            "spec.default_policies",
            "write a list of policy ids (namespace.name)");
    for (var item : items) {
      if (item instanceof YamlTree.Scalar s && s.text() != null && !s.text().isBlank()) {
        policies.add(
            new PolicyAttachment(Optional.of(s.text().strip()), Optional.empty(), s.line()));
      } else {
        throw new DocumentException(
            item.line(),
            "spec.default_policies has an item that is not a policy id",
            "write each as namespace.name");
      }
    }
    return new ToolDocument(
        yaml.file(),
        root.line(),
        YamlFile.text(root, "apiVersion", "apiVersion").orElse(""),
        YamlFile.text(metadata, "namespace", "metadata.namespace").orElse(""),
        YamlFile.text(metadata, "name", "metadata.name").orElse(""),
        YamlFile.text(metadata, "version", "metadata.version"),
        YamlFile.line(metadata, "version"),
        YamlFile.text(spec, "description", "spec.description"),
        YamlFile.text(spec, "side_effect_class", "spec.side_effect_class"),
        YamlFile.line(spec, "side_effect_class"),
        SchemaSpec.read(spec, "input_schema", "spec.input_schema"),
        policies);
  }

  static Mapping empty(Mapping at) {
    return new Mapping(java.util.Map.of(), at.line());
  }
}
