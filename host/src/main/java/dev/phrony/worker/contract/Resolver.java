package dev.phrony.worker.contract;

import com.fasterxml.jackson.databind.JsonNode;
import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.contract.AgentDocument.BindingSpec;
import dev.phrony.worker.contract.AgentDocument.SubagentSpec;
import dev.phrony.worker.contract.ResolvedBinding.Origin;
import dev.phrony.worker.contract.ResolvedBinding.Route;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Resolves an agent against its bundle as the runtime does ({@code internal/manifest/resolve.go},
 * {@code validate.go}), collecting every problem instead of stopping at the first: a binding whose
 * ref {@code namespace.name[@constraint]} names a Tool document of {@code tools/} takes from it
 * what it leaves unset (version, side-effect class, description, input schema, default policies),
 * once the document's version satisfies the constraint; a constraint whose tool is not in {@code
 * tools/} is refused; only a binding with neither gets no version (its key is {@code
 * tool@default}).
 */
final class Resolver {
  private static final Pattern WIRE_NAME = Pattern.compile("[a-zA-Z0-9_-]{1,64}");

  /** A ref {@code namespace.name[@constraint]}, parsed as the runtime's ParseLogicalRef. */
  record LogicalRef(String namespace, String name, String constraint, String raw) {
    static Optional<LogicalRef> parse(String ref) {
      String r = ref.strip();
      String constraint = "";
      int at = r.lastIndexOf('@');
      if (at > 0) {
        constraint = r.substring(at + 1).strip();
        r = r.substring(0, at).strip();
      }
      int dot = r.indexOf('.');
      if (dot <= 0 || dot >= r.length() - 1) {
        return Optional.empty();
      }
      return Optional.of(new LogicalRef(r.substring(0, dot), r.substring(dot + 1), constraint, r));
    }
  }

  private final AgentDocument agent;
  private final Bundle bundle;
  private final Path file;

  Resolver(AgentDocument agent, Bundle bundle) {
    this.agent = agent;
    this.bundle = bundle;
    this.file = agent.file();
  }

  ResolvedAgent resolve() {
    List<Problem> problems = new ArrayList<>(identityProblems());
    List<ResolvedBinding> bindings = new ArrayList<>();
    for (BindingSpec b : agent.tools()) {
      bindings.add(binding(b));
    }
    for (SubagentSpec s : agent.agents()) {
      bindings.add(subagent(s));
    }
    bindings = uniqueness(routeSharedTools(bindings));
    List<PolicyDocument> policies = new ArrayList<>();
    for (PolicyAttachment p : agent.defaultPolicies()) {
      policy(p, "spec.default_policies", problems).ifPresent(policies::add);
    }
    return new ResolvedAgent(agent, bundle, bindings, policies, problems);
  }

  private List<Problem> identityProblems() {
    List<Problem> out = new ArrayList<>();
    if (!Bundle.API_VERSION.equals(agent.apiVersion())) {
      out.add(
          Problem.error(
              file,
              agent.line(),
              "apiVersion",
              "must be " + Bundle.API_VERSION,
              "set apiVersion: " + Bundle.API_VERSION));
    }
    for (String[] f :
        new String[][] {
          {"metadata.name", agent.name()}, {"metadata.namespace", agent.namespace()}
        }) {
      if (f[1].isEmpty()) {
        out.add(Problem.error(file, agent.line(), f[0], "is required", "set it"));
      }
    }
    if (agent.version().isEmpty()) {
      out.add(Problem.error(file, agent.line(), "metadata.version", "is required", "set it"));
    } else if (!Semver.isValid(agent.version())) {
      out.add(
          Problem.error(
              file,
              agent.versionLine(),
              "metadata.version",
              agent.version() + " is not valid semver",
              "write MAJOR.MINOR.PATCH, e.g. 1.0.0"));
    }
    if (agent.inlinePoliciesLine() > 0 && !agent.compiled()) {
      out.add(
          Problem.error(
              file,
              agent.inlinePoliciesLine(),
              "spec.policies",
              "must not be set on an Agent",
              "write kind: Policy documents in policies/ and name them in default_policies or a"
                  + " binding's policies"));
    }
    return out;
  }

  private ResolvedBinding binding(BindingSpec b) {
    List<Problem> problems = new ArrayList<>();
    Optional<LogicalRef> logical = LogicalRef.parse(b.ref());
    String tool = logical.map(LogicalRef::raw).orElse(b.ref().strip());
    Optional<String> constraint = logical.map(LogicalRef::constraint).filter(c -> !c.isEmpty());
    String wireName = b.as().orElse(sanitize(b.ref()));

    Optional<String> version = b.version();
    Optional<Origin> versionFrom = version.map(v -> new Origin(file, b.versionLine(), false));
    if (version.isPresent() && !agent.compiled()) {
      problems.add(
          Problem.warning(
              file,
              b.versionLine(),
              b.path() + ".version",
              "the runtime's publish refuses version on a binding (only a compiled snapshot"
                  + " carries one); it is used here as the key's version",
              "pin the version on the ref instead ("
                  + tool
                  + "@"
                  + version.get()
                  + ") with a Tool document in tools/"));
    }
    Optional<String> sec = b.sideEffectClass();
    Optional<Origin> secFrom = sec.map(s -> new Origin(file, b.sideEffectClassLine(), false));
    Optional<String> description = b.description();
    Optional<JsonNode> schema = Optional.empty();
    Optional<Path> schemaFrom = Optional.empty();
    List<PolicyAttachment> attachments = b.policies();
    Optional<ToolDocument> doc = Optional.empty();
    Route route = Route.WORKER;
    String target = "";

    if (b.agentTarget().isPresent()) {
      route = Route.NESTED_AGENT;
      String id = b.agentTarget().get();
      target = id.isEmpty() ? "a nested agent" : "nested agent " + id;
      if (!id.isEmpty()) {
        tool = id; // the runtime keys an agent binding by its target's namespace.name
      }
    } else if (b.mcpServer().isPresent()) {
      route = Route.MCP;
      String server = b.mcpServer().get();
      target = server.isEmpty() ? "an MCP server" : "MCP server " + server;
      if (constraint.isPresent()) {
        problems.add(
            Problem.warning(
                file,
                b.line(),
                b.path() + ".ref",
                "the runtime refuses a version constraint on an MCP-backed binding",
                "write the ref without @" + constraint.get()));
      }
    } else if (logical.isPresent()) {
      doc = bundle.tool(logical.get().raw());
      if (doc.isPresent()) {
        ToolDocument t = doc.get();
        Semver.unsatisfied(t.id(), t.version().orElse(""), constraint.orElse(""))
            .ifPresent(
                why ->
                    problems.add(
                        Problem.error(
                                file,
                                b.line(),
                                b.path() + ".ref",
                                why + " (" + t.file() + ":" + t.versionLine() + ")",
                                "bind a constraint that "
                                    + t.version().map(v -> v + " satisfies").orElse("it satisfies")
                                    + ", or publish the Tool document with a version that satisfies "
                                    + constraint.orElse(""))
                            .withCode(Problem.VERSION_OUTSIDE_CONSTRAINT)));
        if (version.isEmpty() && t.version().isPresent()) {
          version = t.version();
          versionFrom = Optional.of(new Origin(t.file(), t.versionLine(), true));
        }
        if (description.isEmpty()) {
          description = t.description();
        }
        if (sec.isEmpty() && t.sideEffectClass().isPresent()) {
          sec = t.sideEffectClass();
          secFrom = Optional.of(new Origin(t.file(), t.sideEffectClassLine(), true));
        }
        if (attachments.isEmpty()) {
          attachments = t.defaultPolicies();
        }
        if (b.inputSchema().isEmpty() && t.inputSchema().isPresent()) {
          Bundle.Schema s = bundle.schema(t.inputSchema().get(), t.file(), "spec.input_schema");
          s.problem().ifPresent(problems::add);
          schema = s.json();
          schemaFrom = s.json().map(j -> s.file());
        }
      } else if (constraint.isPresent()) {
        problems.add(
            Problem.error(
                    file,
                    b.line(),
                    b.path() + ".ref",
                    "tool "
                        + logical.get().raw()
                        + " not found in bundle tools/ ("
                        + bundle.root().resolve("tools")
                        + ")",
                    "add tools/"
                        + logical.get().raw()
                        + ".yaml (kind: Tool, metadata.version satisfying "
                        + constraint.get()
                        + "), e.g. from 'phrony-worker tool-manifest "
                        + logical.get().raw()
                        + "@VERSION'; or drop @"
                        + constraint.get()
                        + " to route to "
                        + logical.get().raw()
                        + "@default")
                .withCode(Problem.TOOL_NOT_IN_BUNDLE));
      }
    }
    if (b.inputSchema().isPresent()) {
      Bundle.Schema s = bundle.schema(b.inputSchema().get(), file, b.path() + ".input_schema");
      s.problem().ifPresent(problems::add);
      schema = s.json();
      schemaFrom = s.json().map(j -> s.file());
    }
    if (sec.isPresent() && !isSideEffectClass(sec.get())) {
      Origin o = secFrom.orElseThrow();
      problems.add(
          Problem.error(
                  o.file(),
                  o.line(),
                  o.toolDocument() ? "spec.side_effect_class" : b.path() + ".side_effect_class",
                  sec.get() + " is not a side-effect class",
                  "use one of read_only, idempotent_write, non_idempotent_write,"
                      + " irreversible_action")
              .withCode(Problem.UNKNOWN_SIDE_EFFECT_CLASS));
    }
    List<PolicyDocument> policies = new ArrayList<>();
    for (PolicyAttachment p : attachments) {
      policy(p, b.path() + ".policies", problems).ifPresent(policies::add);
    }
    return new ResolvedBinding(
        file,
        b.path(),
        b.line(),
        b.ref(),
        route,
        target,
        tool,
        constraint,
        version,
        versionFrom,
        wireName,
        sec,
        secFrom,
        description,
        schema,
        schemaFrom,
        doc,
        policies,
        problems);
  }

  /** A {@code spec.agents} entry: the runtime compiles it to an agent-backed binding. */
  private ResolvedBinding subagent(SubagentSpec s) {
    List<Problem> problems = new ArrayList<>();
    Optional<LogicalRef> logical = s.isLocal() ? Optional.empty() : LogicalRef.parse(s.ref());
    if (!s.isLocal() && logical.isEmpty()) {
      problems.add(
          Problem.error(
              file,
              s.line(),
              s.path() + ".ref",
              "ref " + s.ref() + " must be a local path (./...) or namespace.name[@version]",
              "name the agent's manifest file, or its namespace.name@version"));
    }
    List<PolicyDocument> policies = new ArrayList<>();
    for (PolicyAttachment p : s.policies()) {
      policy(p, s.path() + ".policies", problems).ifPresent(policies::add);
    }
    String tool = logical.map(LogicalRef::raw).orElse(s.ref().strip());
    return new ResolvedBinding(
        file,
        s.path(),
        s.line(),
        s.ref(),
        Route.NESTED_AGENT,
        "nested agent " + s.ref().strip(),
        tool,
        logical.map(LogicalRef::constraint).filter(c -> !c.isEmpty()),
        Optional.empty(),
        Optional.empty(),
        s.as().orElse(sanitize(tool)),
        Optional.of(SideEffectClass.NON_IDEMPOTENT_WRITE.wireName()),
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        policies,
        problems);
  }

  /**
   * The executor routes by tool: a worker binding whose tool is also that of an MCP or agent
   * binding of the same agent goes where that one goes.
   */
  private static List<ResolvedBinding> routeSharedTools(List<ResolvedBinding> bindings) {
    Map<String, ResolvedBinding> elsewhere = new LinkedHashMap<>();
    bindings.stream()
        .filter(b -> b.route() != Route.WORKER && b.path().startsWith("spec.tools"))
        .forEach(b -> elsewhere.putIfAbsent(b.tool(), b));
    List<ResolvedBinding> out = new ArrayList<>();
    for (ResolvedBinding b : bindings) {
      ResolvedBinding other = b.route() == Route.WORKER ? elsewhere.get(b.tool()) : null;
      out.add(
          other == null
              ? b
              : b.routedTo(
                  other.route(),
                  other.target() + " (" + other.path() + " binds the same tool " + b.tool() + ")"));
    }
    return out;
  }

  /** Refs and wire names must be unique within an agent, and wire names model-safe. */
  private List<ResolvedBinding> uniqueness(List<ResolvedBinding> bindings) {
    Map<String, String> refs = new HashMap<>();
    Map<String, String> names = new HashMap<>();
    List<ResolvedBinding> out = new ArrayList<>();
    for (ResolvedBinding b : bindings) {
      List<Problem> extra = new ArrayList<>();
      if (b.path().startsWith("spec.tools")) {
        String first = refs.putIfAbsent(b.ref().strip(), b.path());
        if (first != null) {
          extra.add(
              Problem.error(
                  file,
                  b.line(),
                  b.path() + ".ref",
                  "must be unique (" + first + " has the same ref " + b.ref().strip() + ")",
                  "bind each tool once"));
        }
      }
      if (!WIRE_NAME.matcher(b.wireName()).matches()) {
        extra.add(
            Problem.error(
                file,
                b.line(),
                b.path() + ".as",
                "the wire name " + b.wireName() + " must match [a-zA-Z0-9_-]{1,64}",
                "set as: to a name of letters, digits, '_' and '-'"));
      } else {
        String first = names.putIfAbsent(b.wireName(), b.path());
        if (first != null) {
          extra.add(
              Problem.error(
                  file,
                  b.line(),
                  b.path() + ".as",
                  "resolves to the wire name " + b.wireName() + " of " + first + " as well",
                  "give one of them another as:"));
        }
      }
      if (extra.isEmpty()) {
        out.add(b);
        continue;
      }
      out.add(b.withProblems(extra));
    }
    return out;
  }

  private Optional<PolicyDocument> policy(
      PolicyAttachment p, String where, List<Problem> problems) {
    if (p.file().isPresent()) {
      Bundle.Located found =
          bundle.locate(p.file().get(), Optional.empty(), List.of(".yaml", ".yml"));
      if (found.file().isEmpty()) {
        problems.add(
            Problem.error(
                file, p.line(), where, found.reason(), "add the policy file, or correct the ref"));
        return Optional.empty();
      }
      return Bundle.policyFile(found.file().get(), problems);
    }
    String id = p.logical().orElse("");
    Optional<PolicyDocument> doc = bundle.policy(id);
    if (doc.isEmpty()) {
      problems.add(
          Problem.error(
              file,
              p.line(),
              where,
              "policy "
                  + id
                  + " not found in bundle policies/ ("
                  + bundle.root().resolve("policies")
                  + ")",
              "add a kind: Policy document named " + id + " to policies/, or remove it"));
    }
    return doc;
  }

  static boolean isSideEffectClass(String name) {
    try {
      SideEffectClass.fromWire(name);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /**
   * A name the model APIs accept, as the runtime derives one from a ref: every character outside
   * {@code [a-zA-Z0-9_-]} becomes {@code _}, cut to 64.
   */
  static String sanitize(String ref) {
    StringBuilder b = new StringBuilder();
    ref.strip()
        .codePoints()
        .forEach(
            c ->
                b.append(
                    (c >= 'a' && c <= 'z')
                            || (c >= 'A' && c <= 'Z')
                            || (c >= '0' && c <= '9')
                            || c == '_'
                            || c == '-'
                        ? (char) c
                        : '_'));
    return b.length() > 64 ? b.substring(0, 64) : b.toString();
  }
}
