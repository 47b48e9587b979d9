package dev.phrony.worker.agent;

import dev.phrony.worker.contract.Contracts;
import dev.phrony.worker.contract.LoadedManifest;
import dev.phrony.worker.contract.ManifestException;
import dev.phrony.worker.contract.PolicyDocument;
import dev.phrony.worker.contract.Problem;
import dev.phrony.worker.contract.ResolvedAgent;
import dev.phrony.worker.contract.ResolvedBinding;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The agents {@code dev --agent PATH} runs, loaded the way the runtime resolves them (the contract
 * package, as {@code check --manifest} does): a folder with an {@code agent.yaml} (or a {@code
 * bundle.yaml}), or a manifest file; a bundle brings its root and member agents. Each must use the
 * stub model; its policies are compiled as the runtime compiles them (default policies first, then
 * each binding's, one per name).
 */
public final class DevAgents {
  private final Map<String, DevAgent> byRef;

  private DevAgents(Map<String, DevAgent> byRef) {
    this.byRef = byRef;
  }

  public static final DevAgents NONE = new DevAgents(Map.of());

  /**
   * Loads every path.
   *
   * @throws AgentLoadException naming each file, line and field dev cannot run
   */
  public static DevAgents load(List<Path> paths) {
    Map<String, DevAgent> out = new LinkedHashMap<>();
    for (Path path : paths) {
      for (DevAgent a : loadOne(path)) {
        String ref = ref(a.namespace(), a.name());
        DevAgent before = out.putIfAbsent(ref, a);
        if (before != null && !before.file().equals(a.file())) {
          throw new AgentLoadException(
              a.file()
                  + ": agent "
                  + ref
                  + " is loaded twice (also "
                  + before.file()
                  + "): give each --agent a different metadata.namespace/name");
        }
      }
    }
    return new DevAgents(out);
  }

  private static List<DevAgent> loadOne(Path path) {
    Path manifest = manifest(path);
    LoadedManifest loaded;
    try {
      loaded = Contracts.load(manifest);
    } catch (ManifestException e) {
      throw new AgentLoadException(e.getMessage());
    }
    List<Problem> errors = loaded.allProblems().stream().filter(Problem::isError).toList();
    if (!errors.isEmpty()) {
      throw new AgentLoadException(
          manifest
              + ": the runtime would refuse it ("
              + errors.size()
              + " problem"
              + (errors.size() == 1 ? "" : "s")
              + "; 'phrony-worker check --manifest "
              + manifest
              + "' says more):\n  "
              + errors.stream().map(Problem::text).collect(Collectors.joining("\n  ")));
    }
    return loaded.agents().stream().map(DevAgents::agent).toList();
  }

  /** The manifest of {@code --agent PATH}. */
  private static Path manifest(Path path) {
    if (!Files.isDirectory(path)) {
      if (!Files.exists(path)) {
        throw new AgentLoadException(
            "--agent "
                + path
                + ": not found: give a folder with agent.yaml (or bundle.yaml), or a manifest");
      }
      return path;
    }
    for (String name : List.of("agent.yaml", "bundle.yaml")) {
      if (Files.isRegularFile(path.resolve(name))) {
        return path.resolve(name);
      }
    }
    throw new AgentLoadException(
        "--agent " + path + ": has neither agent.yaml nor bundle.yaml: name the manifest file");
  }

  private static DevAgent agent(ResolvedAgent a) {
    var doc = a.document();
    var model = doc.model();
    String provider = model.provider().orElse("");
    if (!provider.equals(DevAgent.STUB)) {
      throw new AgentLoadException(
          doc.file()
              + ":"
              + model.line()
              + ": spec.model.provider: "
              + (provider.isEmpty() ? "missing" : provider)
              + ": dev runs only the runtime's scripted model: set provider: stub and write the"
              + " model's turns in "
              + StubScript.FILE
              + " beside the manifest");
    }
    Map<String, DevAgent.Binding> bindings = new LinkedHashMap<>();
    for (ResolvedBinding b : a.bindings()) {
      if (b.route() != ResolvedBinding.Route.WORKER) {
        throw new AgentLoadException(
            b.file()
                + ":"
                + b.line()
                + ": "
                + b.path()
                + ": "
                + b.ref()
                + (b.route() == ResolvedBinding.Route.MCP
                    ? " is served by an MCP server"
                    : " delegates to another agent")
                + ": dev dispatches only to workers; leave it out to run this scenario under dev");
      }
      bindings.put(
          b.wireName(),
          new DevAgent.Binding(
              b.wireName(),
              b.tool(),
              b.version().orElse("default"),
              b.sideEffectClass().orElse("")));
    }
    return new DevAgent(
        doc.file(),
        doc.namespace(),
        doc.name(),
        doc.version(),
        model.name().orElse(""),
        bindings,
        new Policies(rules(a)),
        StubScript.read(doc.file().toAbsolutePath().getParent()));
  }

  /** The runtime's order: default policies, then each binding's; the first of a name counts. */
  private static List<PolicyRule> rules(ResolvedAgent a) {
    List<PolicyDocument> docs = new ArrayList<>(a.policies());
    a.bindings().forEach(b -> docs.addAll(b.policies()));
    Map<String, PolicyRule> byName = new LinkedHashMap<>();
    for (PolicyDocument d : docs) {
      if (!byName.containsKey(d.name().strip())) {
        byName.put(d.name().strip(), PolicyRule.of(d));
      }
    }
    return List.copyOf(byName.values());
  }

  /** {@code namespace/name}, how a session's {@code agent_ref} names one. */
  static String ref(String namespace, String name) {
    return namespace.strip() + "/" + name.strip();
  }

  /** The agent {@code agent_ref} names (its version, when given, must be the loaded one). */
  public Optional<DevAgent> find(String namespace, String name, String version) {
    return Optional.ofNullable(byRef.get(ref(namespace, name)))
        .filter(a -> version.isBlank() || a.version().equals(version.strip()));
  }

  /** Every agent, in load order. */
  public List<DevAgent> all() {
    return List.copyOf(byRef.values());
  }

  public boolean isEmpty() {
    return byRef.isEmpty();
  }
}
