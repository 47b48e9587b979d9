package dev.phrony.worker.contract;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.phrony.worker.contract.YamlFile.DocumentException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The folder an agent manifest is in, as the runtime indexes it ({@code
 * internal/manifest/bundle.go}): every {@code tools/*.yaml} is a {@code kind: Tool} document named
 * {@code namespace.name}, every {@code policies/*.yaml} a {@code kind: Policy}, and other files
 * (schemas, prompts) are found by bundle-relative ref. A file the runtime would refuse (another
 * kind, another apiVersion, no name, a duplicate id, YAML it cannot read) is a {@link Problem}: the
 * runtime refuses the whole bundle for it.
 */
public final class Bundle {
  /** The only apiVersion the runtime accepts. */
  public static final String API_VERSION = "phrony.com/v1";

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Path root;
  private final Map<String, ToolDocument> tools;
  private final Map<String, PolicyDocument> policies;
  private final List<Problem> problems;

  private Bundle(
      Path root,
      Map<String, ToolDocument> tools,
      Map<String, PolicyDocument> policies,
      List<Problem> problems) {
    this.root = root;
    this.tools = Collections.unmodifiableMap(tools);
    this.policies = Collections.unmodifiableMap(policies);
    this.problems = List.copyOf(problems);
  }

  /** Indexes {@code tools/} and {@code policies/} under {@code root} (absent folders are empty). */
  public static Bundle load(Path root) {
    Path abs = root.toAbsolutePath().normalize();
    Map<String, ToolDocument> tools = new LinkedHashMap<>();
    Map<String, PolicyDocument> policies = new LinkedHashMap<>();
    List<Problem> problems = new ArrayList<>();
    for (Path file : yamlFiles(abs.resolve("tools"), problems)) {
      index(file, ToolDocument.KIND, problems)
          .ifPresent(
              yaml -> {
                try {
                  ToolDocument t = ToolDocument.read(yaml);
                  if (t.id().isEmpty()) {
                    problems.add(
                        Problem.error(
                            file,
                            t.line(),
                            "metadata",
                            "tool metadata.namespace and metadata.name are required",
                            "name the tool as bindings name it: namespace and name"));
                  } else if (tools.containsKey(t.id())) {
                    problems.add(
                        Problem.error(
                            file,
                            t.line(),
                            "",
                            "duplicate tool " + t.id() + " (also " + tools.get(t.id()).file() + ")",
                            "keep one document per tool in tools/"));
                  } else {
                    tools.put(t.id(), t);
                  }
                } catch (DocumentException e) {
                  problems.add(e.problem(file));
                }
              });
    }
    for (Path file : yamlFiles(abs.resolve("policies"), problems)) {
      index(file, "Policy", problems)
          .flatMap(yaml -> policy(yaml, problems))
          .ifPresent(
              p -> {
                if (policies.containsKey(p.id())) {
                  problems.add(
                      Problem.error(
                          file,
                          p.line(),
                          "",
                          "duplicate policy "
                              + p.id()
                              + " (also "
                              + policies.get(p.id()).file()
                              + ")",
                          "keep one document per policy in policies/"));
                } else {
                  policies.put(p.id(), p);
                }
              });
    }
    return new Bundle(abs, tools, policies, problems);
  }

  private static List<Path> yamlFiles(Path dir, List<Problem> problems) {
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(Files::isRegularFile)
          .filter(
              p -> {
                String n = p.getFileName().toString().toLowerCase(Locale.ROOT);
                return n.endsWith(".yaml") || n.endsWith(".yml");
              })
          .sorted()
          .toList();
    } catch (IOException e) {
      problems.add(Problem.error(dir, 0, "", "cannot be listed (" + e + ")", "make it readable"));
      return List.of();
    }
  }

  /** The first document of {@code file} if it is of {@code kind} and apiVersion v1. */
  private static Optional<YamlFile> index(Path file, String kind, List<Problem> problems) {
    try {
      YamlFile yaml = YamlFile.read(file);
      Optional<String> k = yaml.kind();
      if (!k.equals(Optional.of(kind))) {
        problems.add(
            Problem.error(
                file,
                YamlFile.line(yaml.root(), "kind"),
                "kind",
                "expected kind " + kind + (k.map(x -> ", found " + x).orElse(", found none")),
                "keep only kind: "
                    + kind
                    + " documents in "
                    + file.getParent().getFileName()
                    + "/"));
        return Optional.empty();
      }
      Optional<String> api = YamlFile.text(yaml.root(), "apiVersion", "apiVersion");
      if (!api.equals(Optional.of(API_VERSION))) {
        problems.add(
            Problem.error(
                file,
                YamlFile.line(yaml.root(), "apiVersion"),
                "apiVersion",
                "must be " + API_VERSION + api.map(a -> " (found " + a + ")").orElse(""),
                "set apiVersion: " + API_VERSION));
        return Optional.empty();
      }
      return Optional.of(yaml);
    } catch (DocumentException e) {
      problems.add(e.problem(file));
      return Optional.empty();
    }
  }

  private static Optional<PolicyDocument> policy(YamlFile yaml, List<Problem> problems) {
    try {
      var root = yaml.root();
      var metadata =
          YamlFile.mapping(root, "metadata", "metadata").orElse(ToolDocument.empty(root));
      var spec = YamlFile.mapping(root, "spec", "spec").orElse(ToolDocument.empty(root));
      String ns = YamlFile.text(metadata, "namespace", "metadata.namespace").orElse("");
      String name = YamlFile.text(metadata, "name", "metadata.name").orElse("");
      if (ns.isEmpty() || name.isEmpty()) {
        problems.add(
            Problem.error(
                yaml.file(),
                root.line(),
                "metadata",
                "policy metadata.namespace and metadata.name are required",
                "name the policy as agents name it: namespace and name"));
        return Optional.empty();
      }
      Optional<String> decision = Optional.empty();
      var d = YamlFile.mapping(spec, "decision", "spec.decision");
      if (d.isPresent()) {
        decision = YamlFile.text(d.get(), "type", "spec.decision.type");
      }
      return Optional.of(
          new PolicyDocument(
              yaml.file(),
              root.line(),
              ns,
              name,
              YamlFile.text(spec, "scope", "spec.scope"),
              decision,
              new PolicyDocument.Body(
                  json(spec, "conditions"),
                  YamlFile.line(spec, "conditions"),
                  json(spec, "allow"),
                  d.map(YamlTree::toJson),
                  YamlFile.line(spec, "decision"))));
    } catch (DocumentException e) {
      problems.add(e.problem(yaml.file()));
      return Optional.empty();
    }
  }

  private static Optional<JsonNode> json(YamlTree.Mapping parent, String key) {
    YamlTree.Node n = parent.get(key);
    return YamlFile.absent(n) ? Optional.empty() : Optional.of(YamlTree.toJson(n));
  }

  /** The Policy document of a file a binding names by {@code ref:}. */
  static Optional<PolicyDocument> policyFile(Path file, List<Problem> problems) {
    return index(file, "Policy", problems).flatMap(yaml -> policy(yaml, problems));
  }

  /** The bundle's folder, absolute. */
  public Path root() {
    return root;
  }

  /** The Tool document of {@code namespace.name}, if {@code tools/} has one. */
  public Optional<ToolDocument> tool(String id) {
    return Optional.ofNullable(tools.get(id.strip()));
  }

  /** Every Tool document, by id. */
  public Map<String, ToolDocument> tools() {
    return tools;
  }

  /** The Policy document of {@code namespace.name}, if {@code policies/} has one. */
  public Optional<PolicyDocument> policy(String id) {
    return Optional.ofNullable(policies.get(id.strip()));
  }

  /** Every Policy document, by id. */
  public Map<String, PolicyDocument> policies() {
    return policies;
  }

  /** What the runtime would refuse in {@code tools/} and {@code policies/}. */
  public List<Problem> problems() {
    return problems;
  }

  /**
   * The bundle file a ref names, found as the runtime finds it: the ref's own extension, or else
   * each of {@code extensions}; with a version, {@code REF-V}, {@code REF/V} and {@code REF/vV}.
   *
   * @return the file, or why none is found
   */
  Located locate(String ref, Optional<String> version, List<String> extensions) {
    String r = ref.strip();
    if (r.isEmpty()) {
      return Located.notFound("ref is empty");
    }
    if (Path.of(r).isAbsolute()) {
      return Located.notFound("ref " + r + " must be bundle-relative");
    }
    List<String> exts = extensions;
    String name = r.substring(r.lastIndexOf('/') + 1);
    int dot = name.lastIndexOf('.');
    if (dot > 0) {
      exts = List.of(name.substring(dot));
      r = r.substring(0, r.length() - (name.length() - dot));
    }
    List<String> bases =
        version.isPresent()
            ? List.of(r + "-" + version.get(), r + "/" + version.get(), r + "/v" + version.get())
            : List.of(r);
    List<String> tried = new ArrayList<>();
    for (String base : bases) {
      for (String ext : exts) {
        Path candidate = root.resolve(base + ext).normalize();
        if (!candidate.startsWith(root)) {
          continue;
        }
        tried.add(root.relativize(candidate).toString());
        if (Files.exists(candidate)) {
          return new Located(Optional.of(candidate), "");
        }
      }
    }
    return tried.isEmpty()
        ? Located.notFound("ref " + ref.strip() + " escapes the bundle folder " + root)
        : Located.notFound(
            "ref "
                + ref.strip()
                + version.map(v -> " (version " + v + ")").orElse("")
                + " not found in "
                + root
                + " (tried "
                + String.join(", ", tried)
                + ")");
  }

  /** A located file, or why there is none. */
  record Located(Optional<Path> file, String reason) {
    static Located notFound(String reason) {
      return new Located(Optional.empty(), reason);
    }
  }

  /**
   * The JSON Schema of {@code spec}: its inline schema, or the {@code .json} file its ref names.
   *
   * @return the schema and the file it came from ({@code definedIn} for inline), or the problem
   */
  Schema schema(SchemaSpec spec, Path definedIn, String where) {
    if (spec.ref().isEmpty()) {
      return spec.inline()
          .map(j -> new Schema(Optional.of(j), definedIn, Optional.empty()))
          .orElseGet(
              () ->
                  Schema.problem(
                      Problem.error(
                          definedIn,
                          spec.line(),
                          where,
                          "must set exactly one of ref or inline",
                          "write the schema under inline:, or name a schemas/ file with ref:")));
    }
    if (spec.inline().isPresent()) {
      return Schema.problem(
          Problem.error(
              definedIn,
              spec.line(),
              where,
              "set exactly one of ref or inline, not both",
              "keep one of them"));
    }
    Located found = locate(spec.ref().get(), spec.version(), List.of(".json"));
    if (found.file().isEmpty()) {
      return Schema.problem(
          Problem.error(
              definedIn,
              spec.line(),
              where + ".ref",
              found.reason(),
              "add the schema file, or correct the ref"));
    }
    Path file = found.file().get();
    try {
      JsonNode node = JSON.readTree(file.toFile());
      if (node == null || !node.isObject() || node.isEmpty()) {
        return Schema.problem(
            Problem.error(
                file, 1, "", "schema must be a non-empty JSON object", "write a JSON Schema"));
      }
      return new Schema(Optional.of(node), file, Optional.empty());
    } catch (IOException e) {
      return Schema.problem(
          Problem.error(
              file,
              0,
              "",
              "invalid JSON: " + e.getMessage().lines().findFirst().orElse(""),
              "fix the JSON"));
    }
  }

  /** A resolved schema and the file it is in, or the problem that stops it. */
  record Schema(Optional<JsonNode> json, Path file, Optional<Problem> problem) {
    static Schema problem(Problem p) {
      return new Schema(Optional.empty(), p.file(), Optional.of(p));
    }
  }
}
