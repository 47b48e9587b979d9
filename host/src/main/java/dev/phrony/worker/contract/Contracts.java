package dev.phrony.worker.contract;

import dev.phrony.worker.contract.AgentDocument.SubagentSpec;
import dev.phrony.worker.contract.YamlFile.DocumentException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Loads agent manifests as the runtime does: the file's first document is a {@code kind: Agent},
 * resolved against the folder it is in (its {@code tools/}, {@code policies/} and schema files), or
 * a {@code kind: Bundle} whose {@code spec.root} agent and the agents it delegates to by bundle
 * path ({@code spec.agents}) are each resolved against their own folder.
 *
 * <p>What the runtime would refuse is collected as {@link Problem}s, so one run names them all;
 * only a manifest that cannot be read at all fails with a {@link ManifestException}.
 */
public final class Contracts {
  private Contracts() {}

  /**
   * @throws ManifestException when {@code manifest} is missing, unreadable, not YAML, or its first
   *     document is neither {@code kind: Agent} nor {@code kind: Bundle}
   */
  public static LoadedManifest load(Path manifest) {
    YamlFile yaml;
    Optional<String> kind;
    try {
      yaml = YamlFile.read(manifest);
      kind = yaml.kind();
    } catch (DocumentException e) {
      throw e.manifestException(manifest);
    }
    List<Problem> problems = new ArrayList<>();
    if (yaml.documents() > 1) {
      problems.add(
          Problem.warning(
              manifest,
              0,
              "",
              "has "
                  + yaml.documents()
                  + " YAML documents; the runtime reads only the first (kind: "
                  + kind.orElse("none")
                  + ")",
              "put each Tool document in tools/ and each Policy in policies/, one per file"));
    }
    if (kind.equals(Optional.of(AgentDocument.KIND))) {
      Walk walk = new Walk(manifest.toAbsolutePath().normalize().getParent(), problems);
      try {
        walk.add(AgentDocument.read(yaml));
      } catch (DocumentException e) {
        throw e.manifestException(manifest);
      }
      return new LoadedManifest(manifest, Optional.empty(), walk.agents, problems);
    }
    if (kind.equals(Optional.of("Bundle"))) {
      return bundle(manifest, yaml, problems);
    }
    throw new ManifestException(
        manifest,
        YamlFile.line(yaml.root(), "kind"),
        "manifest "
            + shown(manifest)
            + ": "
            + kind.map(k -> "its first document is kind: " + k)
                .orElse("its first document has no kind")
            + " (the runtime reads only the first): pass an agent manifest (kind: Agent) or a"
            + " bundle (kind: Bundle)"
            + (kind.equals(Optional.of(ToolDocument.KIND))
                ? "; to write a plugin from a Tool manifest use new-plugin --from-tool"
                : ""),
        null);
  }

  private static LoadedManifest bundle(Path manifest, YamlFile yaml, List<Problem> problems) {
    Path root = manifest.toAbsolutePath().normalize().getParent();
    String id;
    Optional<String> rootRef;
    try {
      var metadata =
          YamlFile.mapping(yaml.root(), "metadata", "metadata")
              .orElse(ToolDocument.empty(yaml.root()));
      id =
          YamlFile.text(metadata, "namespace", "metadata.namespace").orElse("")
              + "."
              + YamlFile.text(metadata, "name", "metadata.name").orElse("")
              + YamlFile.text(metadata, "version", "metadata.version").map(v -> "@" + v).orElse("");
      rootRef =
          YamlFile.mapping(yaml.root(), "spec", "spec").isPresent()
              ? YamlFile.text(
                  YamlFile.mapping(yaml.root(), "spec", "spec").get(), "root", "spec.root")
              : Optional.empty();
    } catch (DocumentException e) {
      throw e.manifestException(manifest);
    }
    if (!YamlFile.text0(yaml.root(), "apiVersion").equals(Optional.of(Bundle.API_VERSION))) {
      problems.add(
          Problem.error(
              manifest,
              YamlFile.line(yaml.root(), "apiVersion"),
              "apiVersion",
              "must be " + Bundle.API_VERSION,
              "set apiVersion: " + Bundle.API_VERSION));
    }
    if (rootRef.isEmpty()) {
      throw new ManifestException(
          manifest,
          yaml.root().line(),
          "manifest "
              + shown(manifest)
              + ": spec.root is missing: name the root agent's manifest,"
              + " e.g. spec: {root: ./agent.yaml}",
          null);
    }
    Walk walk = new Walk(root, problems);
    walk.member(manifest, yaml.root().line(), "spec.root", rootRef.get());
    return new LoadedManifest(manifest, Optional.of(id), walk.agents, problems);
  }

  /** The agents of one manifest, each resolved once, members reached through spec.agents. */
  private static final class Walk {
    private final Path bundleRoot;
    private final List<Problem> problems;
    private final List<ResolvedAgent> agents = new ArrayList<>();
    private final Map<Path, Bundle> folders = new HashMap<>();
    private final Set<Path> visited = new LinkedHashSet<>();

    Walk(Path bundleRoot, List<Problem> problems) {
      this.bundleRoot = bundleRoot;
      this.problems = problems;
    }

    void add(AgentDocument doc) {
      Path folder = doc.file().toAbsolutePath().normalize().getParent();
      Bundle bundle = folders.computeIfAbsent(folder, Bundle::load);
      agents.add(new Resolver(doc, bundle).resolve());
    }

    /** The member agent {@code ref} (bundle-relative), named at {@code from:line}. */
    void member(Path from, int line, String where, String ref) {
      Path file = bundleRoot.resolve(ref.strip()).normalize();
      if (!file.startsWith(bundleRoot)) {
        problems.add(
            Problem.error(
                from,
                line,
                where,
                ref + " must resolve inside the bundle " + bundleRoot,
                "name a manifest inside the bundle's folder"));
        return;
      }
      if (!visited.add(file)) {
        return; // reached before (a cycle or a shared specialist): resolved once
      }
      AgentDocument doc;
      try {
        YamlFile yaml = YamlFile.read(file);
        if (!yaml.kind().equals(Optional.of(AgentDocument.KIND))) {
          problems.add(
              Problem.error(
                  from,
                  line,
                  where,
                  ref + " is not a kind: Agent manifest",
                  "name the member agent's manifest"));
          return;
        }
        doc = AgentDocument.read(yaml);
      } catch (DocumentException e) {
        problems.add(
            Problem.error(
                file,
                e.line(),
                "",
                e.what() + " (named by " + from + ":" + line + ")",
                e.line() == 0 ? "correct the ref, or add the file" : e.fix()));
        return;
      }
      add(doc);
      for (SubagentSpec s : doc.agents()) {
        if (s.isLocal() && !s.lateBound()) {
          member(doc.file(), s.line(), s.path() + ".ref", s.ref());
        }
      }
    }
  }

  /** A relative path, followed by where it points. */
  static String shown(Path p) {
    return p.isAbsolute() ? p.toString() : p + " (" + p.toAbsolutePath().normalize() + ")";
  }
}
