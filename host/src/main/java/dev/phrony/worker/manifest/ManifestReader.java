package dev.phrony.worker.manifest;

import dev.phrony.worker.SyntaxException;
import dev.phrony.worker.manifest.Binding.Route;
import dev.phrony.worker.manifest.YamlTree.Mapping;
import dev.phrony.worker.manifest.YamlTree.Node;
import dev.phrony.worker.manifest.YamlTree.Scalar;
import dev.phrony.worker.manifest.YamlTree.Sequence;
import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Reads the tool bindings of an agent manifest: a YAML file of one or more documents, of which
 * those with {@code kind: Agent} are read (others, such as {@code Tool} or {@code Policy}, hold no
 * bindings and are passed over).
 *
 * <p>It reads what routing needs and reports where each binding goes, as the runtime decides: a
 * binding with {@code agent:} runs a child agent session, one with {@code mcp:} calls an MCP
 * server, and every other goes to a worker, keyed by {@link Binding#key()}. Like the runtime, a
 * worker binding whose tool is also the tool of an MCP or agent binding of the same agent goes
 * where that one goes. Entries of {@code spec.agents} (authoring sugar that compiles to agent
 * bindings) are reported as nested agents.
 *
 * <p>It does not validate the manifest beyond that (the runtime does, at publish); it refuses only
 * what it cannot read, naming the file and the line.
 */
public final class ManifestReader {
  static final String KIND_AGENT = "Agent";

  /**
   * The bindings of every {@code kind: Agent} document of {@code file}, in file order.
   *
   * @throws ManifestException when the file is missing, unreadable, not YAML, has no {@code kind:
   *     Agent} document, or a binding has no {@code ref}
   */
  public List<Binding> read(Path file) {
    return new Reading(file).bindings();
  }

  /** One read of one file; knows the file for its messages. */
  private static final class Reading {
    private final Path file;

    Reading(Path file) {
      this.file = file;
    }

    List<Binding> bindings() {
      List<Node> documents = parse();
      List<Binding> out = new ArrayList<>();
      int agents = 0;
      for (int i = 0; i < documents.size(); i++) {
        Node doc = documents.get(i);
        if (doc instanceof Scalar s && s.text() == null) {
          continue; // an empty document
        }
        Mapping root =
            mapping(
                doc,
                "document " + (i + 1),
                "an agent manifest is a mapping of apiVersion, kind, metadata and spec");
        Optional<String> kind = text(root, "kind", "kind");
        if (kind.isEmpty()) {
          throw error(
              root.line(),
              "document " + (i + 1) + " has no kind",
              "set kind: Agent (or Tool, Policy) on every document");
        }
        if (kind.get().equals(KIND_AGENT)) {
          agents++;
          out.addAll(agent(i + 1, root));
        }
      }
      if (agents == 0) {
        throw fileError("has no kind: Agent document", "pass the agent's manifest", null);
      }
      return List.copyOf(out);
    }

    private List<Node> parse() {
      if (Files.isDirectory(file)) {
        throw fileError("is a directory", "pass the manifest file itself", null);
      }
      String text;
      try {
        text = Files.readString(file, StandardCharsets.UTF_8);
      } catch (NoSuchFileException e) {
        throw fileError("does not exist", "check the path given with --manifest", e);
      } catch (CharacterCodingException e) {
        throw fileError("is not UTF-8 text", "save it as UTF-8", e);
      } catch (IOException e) {
        throw fileError(
            "cannot be read (" + e + ")", "check that it is a file readable by " + "this user", e);
      }
      try {
        return YamlTree.read(new StringReader(text));
      } catch (SyntaxException e) {
        throw new ManifestException(
            file,
            e.line(),
            "manifest "
                + shown(file)
                + ": YAML syntax error at line "
                + e.line()
                + ", column "
                + e.column()
                + ": "
                + e.problem(),
            e);
      } catch (IOException e) {
        throw new IllegalStateException("reading a string cannot fail", e);
      }
    }

    /** The bindings of one Agent document. */
    private List<Binding> agent(int document, Mapping root) {
      Node specNode = root.get("spec");
      if (isAbsent(specNode)) {
        return List.of();
      }
      Mapping spec =
          mapping(specNode, "spec", "write spec as a mapping (purpose, model, tools...)");
      List<Binding> tools = new ArrayList<>();
      // tool ref (as the runtime keys it) -> the MCP or agent binding that takes its calls
      Map<String, Binding> elsewhere = new LinkedHashMap<>();
      List<Node> items = items(spec, "tools");
      for (int i = 0; i < items.size(); i++) {
        String path = "spec.tools[" + i + "]";
        Mapping m =
            mapping(
                items.get(i),
                path,
                "write each binding as a mapping with a ref (and version, side_effect_class...)");
        String ref = ref(m, path);
        Optional<String> version = text(m, "version", path + ".version");
        Optional<String> sideEffect = text(m, "side_effect_class", path + ".side_effect_class");
        Optional<Mapping> agent = optionalMapping(m, "agent", path + ".agent");
        Optional<Mapping> mcp = optionalMapping(m, "mcp", path + ".mcp");
        Binding b;
        if (agent.isPresent()) {
          // The runtime keys an agent binding by its target's namespace.name when it has one.
          Optional<String> ns = text(agent.get(), "namespace", path + ".agent.namespace");
          Optional<String> name = text(agent.get(), "name", path + ".agent.name");
          String id = ns.isPresent() && name.isPresent() ? ns.get() + "." + name.get() : null;
          b =
              new Binding(
                  document,
                  path,
                  m.line(),
                  ref,
                  version,
                  sideEffect,
                  Route.NESTED_AGENT,
                  id == null ? "a nested agent" : "nested agent " + id);
          elsewhere.putIfAbsent(id == null ? Binding.tool(ref) : id, b);
        } else if (mcp.isPresent()) {
          Optional<String> server = text(mcp.get(), "server", path + ".mcp.server");
          b =
              new Binding(
                  document,
                  path,
                  m.line(),
                  ref,
                  version,
                  sideEffect,
                  Route.MCP,
                  server.map(s -> "MCP server " + s).orElse("an MCP server"));
          elsewhere.putIfAbsent(Binding.tool(ref), b);
        } else {
          b = new Binding(document, path, m.line(), ref, version, sideEffect, Route.WORKER, "");
        }
        tools.add(b);
      }
      List<Binding> out = new ArrayList<>();
      for (Binding b : tools) {
        Binding other = b.route() == Route.WORKER ? elsewhere.get(b.tool()) : null;
        out.add(
            other == null
                ? b
                : new Binding(
                    b.document(),
                    b.path(),
                    b.line(),
                    b.ref(),
                    b.version(),
                    b.sideEffectClass(),
                    other.route(),
                    other.target()
                        + " ("
                        + other.path()
                        + " binds the same tool "
                        + b.tool()
                        + ")"));
      }
      List<Node> agents = items(spec, "agents");
      for (int i = 0; i < agents.size(); i++) {
        String path = "spec.agents[" + i + "]";
        Mapping m =
            mapping(
                agents.get(i),
                path,
                "write each entry as a mapping with a ref (a manifest path or namespace.name@version)");
        String ref = ref(m, path);
        out.add(
            new Binding(
                document,
                path,
                m.line(),
                ref,
                Optional.empty(),
                Optional.empty(),
                Route.NESTED_AGENT,
                "nested agent " + ref));
      }
      return out;
    }

    private String ref(Mapping m, String path) {
      Node node = m.get("ref");
      if (isAbsent(node)) {
        throw error(
            node == null ? m.line() : node.line(),
            path + ".ref is missing",
            "give every binding a ref (the tool name, e.g. weather.get-forecast)");
      }
      return text(m, "ref", path + ".ref")
          .orElseThrow(
              () -> error(node.line(), path + ".ref is empty", "give every binding a ref"));
    }

    /** The items of {@code parent.key}, or none when absent. */
    private List<Node> items(Mapping parent, String key) {
      Node node = parent.get(key);
      if (isAbsent(node)) {
        return List.of();
      }
      if (node instanceof Sequence s) {
        return s.items();
      }
      throw error(
          node.line(),
          "spec." + key + " is not a list",
          "write it as a list of " + "mappings, one per binding (- ref: ...)");
    }

    /** A scalar's text without surrounding blanks; empty when absent or blank. */
    private Optional<String> text(Mapping parent, String key, String path) {
      Node node = parent.get(key);
      if (node == null) {
        return Optional.empty();
      }
      if (node instanceof Scalar s) {
        return Optional.ofNullable(s.text()).map(String::strip).filter(t -> !t.isEmpty());
      }
      throw error(node.line(), path + " is not a single value", "write it as a string");
    }

    private Optional<Mapping> optionalMapping(Mapping parent, String key, String path) {
      Node node = parent.get(key);
      if (isAbsent(node)) {
        return Optional.empty();
      }
      return Optional.of(mapping(node, path, "write it as a mapping, or leave it out"));
    }

    private Mapping mapping(Node node, String what, String fix) {
      if (node instanceof Mapping m) {
        return m;
      }
      throw error(node.line(), what + (isAbsent(node) ? " is empty" : " is not a mapping"), fix);
    }

    private static boolean isAbsent(Node node) {
      return node == null || node instanceof Scalar s && s.text() == null;
    }

    /** {@code manifest FILE: WHAT at line N: FIX}. */
    private ManifestException error(int line, String what, String fix) {
      return new ManifestException(
          file,
          line,
          "manifest " + shown(file) + ": " + what + " at line " + line + ": " + fix,
          null);
    }

    /** {@code manifest FILE WHAT: FIX}. */
    private ManifestException fileError(String what, String fix, Throwable cause) {
      return new ManifestException(
          file, 0, "manifest " + shown(file) + " " + what + ": " + fix, cause);
    }
  }

  /** A relative path, followed by where it points. */
  private static String shown(Path p) {
    return p.isAbsolute() ? p.toString() : p + " (" + p.toAbsolutePath().normalize() + ")";
  }
}
