package dev.phrony.worker.manifest;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.HostJson;
import dev.phrony.worker.TextColumns;
import dev.phrony.worker.contract.LoadedManifest;
import dev.phrony.worker.contract.Problem;
import dev.phrony.worker.contract.ResolvedAgent;
import dev.phrony.worker.contract.ResolvedBinding;
import dev.phrony.worker.contract.ResolvedBinding.Route;
import dev.phrony.worker.plugin.HandlerCatalog;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Whether a worker with these handlers serves the agents of a manifest, binding by binding, once
 * the manifest is resolved as the runtime resolves it ({@link LoadedManifest}): served (and by
 * which plugin), missing, refused by the runtime (version outside the ref's constraint, other
 * manifest errors), served with another side-effect class, or with an input schema that fails
 * calls; MCP and nested-agent bindings are skipped.
 *
 * @param manifest the manifest's path as given
 * @param loaded the manifest, resolved
 * @param rows one per binding, agent by agent, in file order
 */
public record CheckReport(String manifest, LoadedManifest loaded, List<Row> rows) {
  private static final ObjectMapper JSON = HostJson.MAPPER;

  /**
   * What a check found for one binding. When several apply, the first of: skipped, manifest error,
   * version outside constraint, missing, class mismatch, schema mismatch, served.
   */
  public enum Status {
    /** A handler serves its key with the manifest's side-effect class and a fitting schema. */
    SERVED,
    /** No handler serves its key. */
    MISSING,
    /** Its Tool document's version does not satisfy the ref's constraint: refused. */
    VERSION_OUTSIDE_CONSTRAINT,
    /** The runtime would refuse the manifest for it (see its problems). */
    MANIFEST_ERROR,
    /** A handler serves its key, but with another side-effect class (or none is declared). */
    CLASS_MISMATCH,
    /** A handler serves its key, but its input schema refuses calls the manifest's allows. */
    SCHEMA_MISMATCH,
    /** The runtime does not route it to workers (MCP, nested agent). */
    SKIPPED;

    /** {@code served}, {@code missing}, {@code class_mismatch}... */
    public String wireName() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * One binding's outcome.
   *
   * @param agent the agent's {@code namespace.name}
   * @param binding the resolved binding
   * @param status what was found
   * @param plugin the plugin whose handler serves the key
   * @param handlerSideEffectClass that handler's side-effect class
   * @param reason why it is not served (or skipped); empty when served
   * @param schemaFindings where the manifest's and the handler's input schemas disagree
   */
  public record Row(
      String agent,
      ResolvedBinding binding,
      Status status,
      Optional<String> plugin,
      Optional<String> handlerSideEffectClass,
      Optional<String> reason,
      List<SchemaDiff.Finding> schemaFindings) {
    public Row {
      Objects.requireNonNull(binding, "binding");
      Objects.requireNonNull(status, "status");
      schemaFindings = List.copyOf(schemaFindings);
    }

    /** The routing key, for bindings routed to workers. */
    public Optional<String> key() {
      return binding.route() == Route.WORKER ? Optional.of(binding.key()) : Optional.empty();
    }

    /** Warnings on it: the binding's own, then its schema's. */
    int warnings() {
      return (int)
          (binding.problems().stream().filter(p -> !p.isError()).count()
              + schemaFindings.stream()
                  .filter(f -> f.severity() == SchemaDiff.Severity.WARNING)
                  .count());
    }
  }

  public CheckReport {
    Objects.requireNonNull(manifest, "manifest");
    Objects.requireNonNull(loaded, "loaded");
    rows = List.copyOf(rows);
  }

  /** Checks every binding of {@code loaded} against the handlers of {@code catalog}. */
  public static CheckReport check(String manifest, LoadedManifest loaded, HandlerCatalog catalog) {
    List<Row> rows = new ArrayList<>();
    for (ResolvedAgent a : loaded.agents()) {
      for (ResolvedBinding b : a.bindings()) {
        rows.add(Verdict.of(a.document().id(), b, catalog));
      }
    }
    return new CheckReport(manifest, loaded, rows);
  }

  /** Problems not tied to one binding: the manifest's, its folders', its agents'. */
  public List<Problem> generalProblems() {
    List<Problem> out = new ArrayList<>(loaded.problems());
    loaded.agents().stream()
        .map(ResolvedAgent::bundle)
        .distinct()
        .forEach(b -> out.addAll(b.problems()));
    loaded.agents().forEach(a -> out.addAll(a.problems()));
    return out;
  }

  /** True when every binding routed to workers is served and the runtime would refuse nothing. */
  public boolean ok() {
    return rows.stream().allMatch(r -> r.status() == Status.SERVED || r.status() == Status.SKIPPED)
        && generalProblems().stream().noneMatch(Problem::isError)
        && rows.stream().noneMatch(r -> r.binding().hasErrors());
  }

  /** How many rows have each status (every status present, zero or not). */
  public Map<Status, Long> counts() {
    Map<Status, Long> counts = new EnumMap<>(Status.class);
    for (Status s : Status.values()) {
      counts.put(s, rows.stream().filter(r -> r.status() == s).count());
    }
    return counts;
  }

  private long errors() {
    return generalProblems().stream().filter(Problem::isError).count();
  }

  private long warnings() {
    return generalProblems().stream().filter(p -> !p.isError()).count()
        + rows.stream().mapToLong(Row::warnings).sum();
  }

  /**
   * The manifest, then per agent its file and one row per binding (line, key or ref, wire name,
   * status, and the plugin or the reason, each problem and schema finding indented below), then the
   * problems not tied to a binding, then {@code ok} or {@code not ok} with the counts.
   */
  public String table() {
    StringBuilder out = new StringBuilder("manifest: ").append(manifest).append('\n');
    loaded.bundle().ifPresent(b -> out.append("bundle:   ").append(b).append('\n'));
    for (ResolvedAgent a : loaded.agents()) {
      agentHeader(out, a);
      List<Row> mine = rows.stream().filter(r -> r.binding().file().equals(a.file())).toList();
      if (mine.isEmpty()) {
        out.append("no tool bindings\n");
        continue;
      }
      List<List<String>> lines = new ArrayList<>();
      lines.add(List.of("LINE", "BINDING", "AS", "STATUS", "DETAIL"));
      for (Row r : mine) {
        ResolvedBinding b = r.binding();
        lines.add(
            List.of(
                Integer.toString(b.line()),
                r.key().orElse(b.ref()),
                b.wireName(),
                r.status().wireName(),
                r.reason().or(r::plugin).orElse("")));
      }
      StringBuilder table = new StringBuilder();
      TextColumns.append(table, lines);
      List<String> formatted = table.toString().lines().toList();
      out.append(formatted.getFirst()).append('\n');
      for (int i = 0; i < mine.size(); i++) {
        out.append(formatted.get(i + 1)).append('\n');
        Row r = mine.get(i);
        for (Problem p : r.binding().problems()) {
          out.append("      ").append(p.severity().wireName()).append(": ").append(p.text());
          out.append('\n');
        }
        for (SchemaDiff.Finding f : r.schemaFindings()) {
          out.append("      ")
              .append(f.severity() == SchemaDiff.Severity.ERROR ? "error" : "warning")
              .append(": input schema ")
              .append(f.text())
              .append('\n');
        }
      }
    }
    List<Problem> general = generalProblems();
    if (!general.isEmpty()) {
      out.append("\nproblems:\n");
      general.forEach(
          p ->
              out.append("  ")
                  .append(p.severity().wireName())
                  .append(": ")
                  .append(p.text())
                  .append('\n'));
    }
    String counts =
        counts().entrySet().stream()
            .filter(e -> e.getValue() > 0)
            .map(e -> e.getValue() + " " + e.getKey().wireName())
            .collect(Collectors.joining(", "));
    long errors = errors();
    long warnings = warnings();
    List<String> tail = new ArrayList<>();
    if (!counts.isEmpty()) {
      tail.add(counts);
    }
    if (errors > 0) {
      tail.add(errors + (errors == 1 ? " other problem" : " other problems"));
    }
    String w = warnings > 0 ? " (" + warnings + (warnings == 1 ? " warning)" : " warnings)") : "";
    return out.append('\n')
        .append(ok() ? "ok" : "not ok")
        .append(tail.isEmpty() ? "" : ": " + String.join(", ", tail))
        .append(w)
        .append('\n')
        .toString();
  }

  /**
   * {@code {"manifest", "bundle", "agents": [{"id", "version", "file", "bundle_root"}], "bindings":
   * [{"agent", "file", "line", "path", "ref", "key", "wire_name", "route", "status", "plugin",
   * "version", "version_from", "declared_side_effect_class", "side_effect_class_from",
   * "handler_side_effect_class", "tool_manifest", "input_schema_from", "reason", "problems": [...],
   * "schema": [{"severity", "pointer", "message"}]}], "problems": [{"severity", "code", "file",
   * "line", "where", "message", "fix"}], "ok"}}; absent values are {@code null}.
   */
  public String json() {
    ObjectNode root = JSON.createObjectNode();
    root.put("manifest", manifest);
    root.put("bundle", loaded.bundle().orElse(null));
    ArrayNode agents = root.putArray("agents");
    for (ResolvedAgent a : loaded.agents()) {
      ObjectNode o = agents.addObject();
      o.put("id", a.document().id());
      o.put("version", a.document().version());
      o.put("file", a.file().toString());
      o.put("bundle_root", a.bundle().root().toString());
    }
    ArrayNode bindings = root.putArray("bindings");
    for (Row r : rows) {
      ResolvedBinding b = r.binding();
      ObjectNode o = bindings.addObject();
      o.put("agent", r.agent());
      o.put("file", b.file().toString());
      o.put("line", b.line());
      o.put("path", b.path());
      o.put("ref", b.ref());
      o.put("key", r.key().orElse(null));
      o.put("wire_name", b.wireName());
      o.put("route", b.route().name().toLowerCase(Locale.ROOT));
      o.put("status", r.status().wireName());
      o.put("plugin", r.plugin().orElse(null));
      o.put("version", b.version().orElse(null));
      o.put("version_from", b.versionFrom().map(Object::toString).orElse(null));
      o.put("declared_side_effect_class", b.sideEffectClass().orElse(null));
      o.put("side_effect_class_from", b.sideEffectClassFrom().map(Object::toString).orElse(null));
      o.put("handler_side_effect_class", r.handlerSideEffectClass().orElse(null));
      o.put("tool_manifest", b.toolDocument().map(t -> t.file().toString()).orElse(null));
      o.put("input_schema_from", b.inputSchemaFrom().map(Object::toString).orElse(null));
      o.put("reason", r.reason().orElse(null));
      ArrayNode problems = o.putArray("problems");
      b.problems().forEach(p -> problems.add(problem(p)));
      ArrayNode schema = o.putArray("schema");
      for (SchemaDiff.Finding f : r.schemaFindings()) {
        ObjectNode s = schema.addObject();
        s.put("severity", f.severity() == SchemaDiff.Severity.ERROR ? "error" : "warning");
        s.put("pointer", f.pointer());
        s.put("message", f.message());
      }
    }
    ArrayNode problems = root.putArray("problems");
    generalProblems().forEach(p -> problems.add(problem(p)));
    root.put("ok", ok());
    try {
      return JSON.writeValueAsString(root) + "\n";
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a tree of strings and numbers always serializes", e);
    }
  }

  private static JsonNode problem(Problem p) {
    ObjectNode o = JSON.createObjectNode();
    o.put("severity", p.severity().wireName());
    o.put("code", p.code());
    o.put("file", p.file().toString());
    o.put("line", p.line());
    o.put("where", p.where());
    o.put("message", p.message());
    o.put("fix", p.fix());
    return o;
  }

  /** The header line of one agent's section. */
  private static void agentHeader(StringBuilder out, ResolvedAgent a) {
    var d = a.document();
    int tools = a.bundle().tools().size();
    out.append("\nagent ")
        .append(d.id())
        .append(d.version().isEmpty() ? "" : "@" + d.version())
        .append(" (")
        .append(a.file())
        .append("; tools/: ")
        .append(tools)
        .append(tools == 1 ? " Tool document" : " Tool documents")
        .append(")\n\n");
  }
}
