package dev.phrony.worker.contract;

import dev.phrony.worker.contract.YamlFile.DocumentException;
import dev.phrony.worker.contract.YamlTree.Mapping;
import dev.phrony.worker.contract.YamlTree.Node;
import dev.phrony.worker.contract.YamlTree.Scalar;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A {@code kind: Agent} document as written (before its bundle is resolved): identity, tool
 * bindings, delegations to other agents and the policies it names.
 *
 * @param file where it is
 * @param line where the document starts
 * @param apiVersion {@code apiVersion}
 * @param namespace {@code metadata.namespace}
 * @param name {@code metadata.name}
 * @param version {@code metadata.version}
 * @param versionLine its line
 * @param tools {@code spec.tools}
 * @param agents {@code spec.agents}
 * @param defaultPolicies {@code spec.default_policies}
 * @param inlinePoliciesLine the line of {@code spec.policies} (0 when absent), which only a
 *     compiled snapshot may carry
 * @param compiled whether it is a compiled snapshot ({@code phrony.com/policies-compiled: "true"})
 * @param model {@code spec.model}
 */
public record AgentDocument(
    Path file,
    int line,
    String apiVersion,
    String namespace,
    String name,
    String version,
    int versionLine,
    List<BindingSpec> tools,
    List<SubagentSpec> agents,
    List<PolicyAttachment> defaultPolicies,
    int inlinePoliciesLine,
    boolean compiled,
    Model model) {

  /**
   * {@code spec.model}, as far as dev runs it.
   *
   * @param provider {@code provider}, e.g. {@code stub}
   * @param name {@code name}
   * @param line where {@code spec.model} is (the document's line when absent)
   */
  public record Model(Optional<String> provider, Optional<String> name, int line) {}

  public static final String KIND = "Agent";
  static final String COMPILED_ANNOTATION = "phrony.com/policies-compiled";

  public AgentDocument {
    tools = List.copyOf(tools);
    agents = List.copyOf(agents);
    defaultPolicies = List.copyOf(defaultPolicies);
  }

  /** {@code namespace.name}. */
  public String id() {
    return namespace + "." + name;
  }

  /**
   * One entry of {@code spec.tools}, as written.
   *
   * @param path {@code spec.tools[i]}
   * @param line where it starts
   * @param ref {@code ref}
   * @param as {@code as}, the wire name the model sees
   * @param description {@code description}
   * @param version {@code version} (only a compiled snapshot may set it)
   * @param versionLine its line
   * @param sideEffectClass {@code side_effect_class}
   * @param sideEffectClassLine its line
   * @param inputSchema {@code input_schema}
   * @param mcpServer {@code mcp.server} when the binding has {@code mcp:} (possibly blank)
   * @param agentTarget {@code agent:}'s {@code namespace.name} when the binding has {@code agent:}
   *     (possibly blank)
   * @param policies {@code policies}
   */
  public record BindingSpec(
      String path,
      int line,
      String ref,
      Optional<String> as,
      Optional<String> description,
      Optional<String> version,
      int versionLine,
      Optional<String> sideEffectClass,
      int sideEffectClassLine,
      Optional<SchemaSpec> inputSchema,
      Optional<String> mcpServer,
      Optional<String> agentTarget,
      List<PolicyAttachment> policies) {
    public BindingSpec {
      policies = List.copyOf(policies);
    }
  }

  /**
   * One entry of {@code spec.agents}: another agent this one calls as a tool.
   *
   * @param path {@code spec.agents[i]}
   * @param line where it starts
   * @param ref a bundle path ({@code ./specialists/payment.yaml}) or {@code namespace.name@version}
   * @param as the wire name
   * @param lateBound {@code late_bound}
   * @param policies {@code policies}
   */
  public record SubagentSpec(
      String path,
      int line,
      String ref,
      Optional<String> as,
      boolean lateBound,
      List<PolicyAttachment> policies) {
    public SubagentSpec {
      policies = List.copyOf(policies);
    }

    /** True for a bundle path, as the runtime tells one from a catalog id. */
    public boolean isLocal() {
      String r = ref.strip();
      if (r.startsWith("./") || r.startsWith("../") || r.contains("/") || r.contains("\\")) {
        return true;
      }
      String lower = r.toLowerCase(java.util.Locale.ROOT);
      return lower.endsWith(".yaml") || lower.endsWith(".yml");
    }
  }

  /** Reads the first document of {@code yaml}, which must be {@code kind: Agent}. */
  static AgentDocument read(YamlFile yaml) throws DocumentException {
    Mapping root = yaml.root();
    Mapping metadata =
        YamlFile.mapping(root, "metadata", "metadata").orElse(ToolDocument.empty(root));
    Mapping spec = YamlFile.mapping(root, "spec", "spec").orElse(ToolDocument.empty(root));
    boolean compiled =
        YamlFile.mapping(metadata, "annotations", "metadata.annotations")
            .map(a -> a.get(COMPILED_ANNOTATION))
            .filter(n -> n instanceof Scalar s && "true".equals(s.text()))
            .isPresent();
    List<BindingSpec> tools = new ArrayList<>();
    List<Node> items =
        YamlFile.items(
            spec,
            "tools",
            "spec.tools",
            "write it as a list of mappings, one per binding (- ref: ...)");
    for (int i = 0; i < items.size(); i++) {
      tools.add(binding(items.get(i), "spec.tools[" + i + "]"));
    }
    List<SubagentSpec> agents = new ArrayList<>();
    List<Node> subs =
        YamlFile.items(
            spec,
            "agents",
            "spec.agents",
            "write it as a list of mappings, one per agent (- ref: ./specialists/x.yaml)");
    for (int i = 0; i < subs.size(); i++) {
      String path = "spec.agents[" + i + "]";
      Mapping m = entry(subs.get(i), path, "write each as a mapping with a ref");
      agents.add(
          new SubagentSpec(
              path,
              m.line(),
              ref(m, path),
              YamlFile.text(m, "as", path + ".as"),
              YamlFile.text(m, "late_bound", path + ".late_bound")
                  .filter("true"::equals)
                  .isPresent(),
              policies(m, "policies", path + ".policies")));
    }
    Node inline = spec.get("policies");
    Optional<Mapping> model = YamlFile.mapping(spec, "model", "spec.model");
    return new AgentDocument(
        yaml.file(),
        root.line(),
        YamlFile.text(root, "apiVersion", "apiVersion").orElse(""),
        YamlFile.text(metadata, "namespace", "metadata.namespace").orElse(""),
        YamlFile.text(metadata, "name", "metadata.name").orElse(""),
        YamlFile.text(metadata, "version", "metadata.version").orElse(""),
        YamlFile.line(metadata, "version"),
        tools,
        agents,
        policies(spec, "default_policies", "spec.default_policies"),
        YamlFile.absent(inline) ? 0 : inline.line(),
        compiled,
        new Model(
            model.isPresent()
                ? YamlFile.text(model.get(), "provider", "spec.model.provider")
                : Optional.empty(),
            model.isPresent()
                ? YamlFile.text(model.get(), "name", "spec.model.name")
                : Optional.empty(),
            YamlFile.line(spec, "model")));
  }

  private static BindingSpec binding(Node node, String path) throws DocumentException {
    Mapping m =
        entry(node, path, "write each binding as a mapping with a ref (and as, input_schema...)");
    Optional<Mapping> mcp = YamlFile.mapping(m, "mcp", path + ".mcp");
    Optional<Mapping> agent = YamlFile.mapping(m, "agent", path + ".agent");
    Optional<String> agentTarget = Optional.empty();
    if (agent.isPresent()) {
      Optional<String> ns = YamlFile.text(agent.get(), "namespace", path + ".agent.namespace");
      Optional<String> name = YamlFile.text(agent.get(), "name", path + ".agent.name");
      agentTarget =
          Optional.of(ns.isPresent() && name.isPresent() ? ns.get() + "." + name.get() : "");
    }
    Optional<String> server = Optional.empty();
    if (mcp.isPresent()) {
      server = Optional.of(YamlFile.text(mcp.get(), "server", path + ".mcp.server").orElse(""));
    }
    return new BindingSpec(
        path,
        m.line(),
        ref(m, path),
        YamlFile.text(m, "as", path + ".as"),
        YamlFile.text(m, "description", path + ".description"),
        YamlFile.text(m, "version", path + ".version"),
        YamlFile.line(m, "version"),
        YamlFile.text(m, "side_effect_class", path + ".side_effect_class"),
        YamlFile.line(m, "side_effect_class"),
        SchemaSpec.read(m, "input_schema", path + ".input_schema"),
        server,
        agentTarget,
        policies(m, "policies", path + ".policies"));
  }

  private static Mapping entry(Node node, String path, String fix) throws DocumentException {
    if (node instanceof Mapping m) {
      return m;
    }
    throw new DocumentException(
        node.line(), path + (YamlFile.absent(node) ? " is empty" : " is not a mapping"), fix);
  }

  private static String ref(Mapping m, String path) throws DocumentException {
    Node node = m.get("ref");
    Optional<String> ref = YamlFile.text(m, "ref", path + ".ref");
    if (ref.isEmpty()) {
      throw new DocumentException(
          node == null ? m.line() : node.line(),
          path + ".ref is " + (node == null ? "missing" : "empty"),
          "give every binding a ref (the tool's namespace.name, e.g. weather.get-forecast@1.0.0)");
    }
    return ref.get();
  }

  /** A list of policy attachments: {@code namespace.name} or {@code {ref: FILE}}. */
  static List<PolicyAttachment> policies(Mapping parent, String key, String path)
      throws DocumentException {
    List<PolicyAttachment> out = new ArrayList<>();
    List<Node> items =
        YamlFile.items(
            parent, key, path, "write a list of policy ids, or of {ref: policies/FILE} mappings");
    for (int i = 0; i < items.size(); i++) {
      Node n = items.get(i);
      String at = path + "[" + i + "]";
      if (n instanceof Scalar s && s.text() != null && !s.text().isBlank()) {
        out.add(new PolicyAttachment(Optional.of(s.text().strip()), Optional.empty(), n.line()));
      } else if (n instanceof Mapping m && YamlFile.text(m, "ref", at + ".ref").isPresent()) {
        out.add(
            new PolicyAttachment(Optional.empty(), YamlFile.text(m, "ref", at + ".ref"), n.line()));
      } else {
        throw new DocumentException(
            n.line(),
            at + " is neither a policy id nor a {ref: FILE} mapping",
            "write namespace.name, or ref: policies/FILE");
      }
    }
    return out;
  }
}
