package dev.phrony.worker.manifest;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.HostJson;
import dev.phrony.worker.TextColumns;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.manifest.Binding.Route;
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
 * Whether a worker with these handlers serves an agent manifest: for each binding, served (and by
 * which plugin), missing, served with another side-effect class than the manifest declares, or
 * skipped because the runtime does not route it to workers.
 *
 * @param manifest the manifest's path as given
 * @param rows one per binding, in file order
 */
public record CheckReport(String manifest, List<Row> rows) {
  private static final ObjectMapper JSON = HostJson.MAPPER;

  /** What a check found for one binding. */
  public enum Status {
    /** A handler serves its key with the side-effect class the manifest declares. */
    SERVED,
    /** No handler serves its key. */
    MISSING,
    /** A handler serves its key, but with another side-effect class (or none is declared). */
    CLASS_MISMATCH,
    /** The runtime does not route it to workers (MCP, nested agent). */
    SKIPPED;

    /** {@code served}, {@code missing}, {@code class_mismatch}, {@code skipped}. */
    public String wireName() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * One binding's outcome.
   *
   * @param binding the binding
   * @param status what was found
   * @param plugin the plugin whose handler serves the key (served, class mismatch)
   * @param handlerSideEffectClass that handler's side-effect class
   * @param reason why it is not served, or why it is skipped; empty when served
   */
  public record Row(
      Binding binding,
      Status status,
      Optional<String> plugin,
      Optional<String> handlerSideEffectClass,
      Optional<String> reason) {
    public Row {
      Objects.requireNonNull(binding, "binding");
      Objects.requireNonNull(status, "status");
      Objects.requireNonNull(plugin, "plugin");
      Objects.requireNonNull(handlerSideEffectClass, "handlerSideEffectClass");
      Objects.requireNonNull(reason, "reason");
    }

    /** The routing key, for bindings routed to workers. */
    public Optional<String> key() {
      return binding.route() == Route.WORKER ? Optional.of(binding.key()) : Optional.empty();
    }
  }

  public CheckReport {
    Objects.requireNonNull(manifest, "manifest");
    rows = List.copyOf(rows);
  }

  /** Checks each binding against the handlers of {@code catalog}. */
  public static CheckReport check(String manifest, List<Binding> bindings, HandlerCatalog catalog) {
    List<Row> rows = new ArrayList<>();
    for (Binding b : bindings) {
      rows.add(row(b, catalog));
    }
    return new CheckReport(manifest, rows);
  }

  private static Row row(Binding b, HandlerCatalog catalog) {
    if (b.route() != Route.WORKER) {
      return new Row(
          b,
          Status.SKIPPED,
          Optional.empty(),
          Optional.empty(),
          Optional.of("routed to " + b.target() + ", not to a worker"));
    }
    Optional<HandlerCatalog.Entry> found =
        catalog.find(b.tool(), b.version().orElse(ToolDescriptor.DEFAULT_VERSION));
    if (found.isEmpty()) {
      return new Row(
          b, Status.MISSING, Optional.empty(), Optional.empty(), Optional.of(missing(b, catalog)));
    }
    HandlerCatalog.Entry e = found.get();
    String handlerClass = e.descriptor().sideEffectClass().wireName();
    boolean same = b.sideEffectClass().map(handlerClass::equals).orElse(false);
    return new Row(
        b,
        same ? Status.SERVED : Status.CLASS_MISMATCH,
        Optional.of(e.plugin()),
        Optional.of(handlerClass),
        same
            ? Optional.empty()
            : Optional.of(mismatch(b.sideEffectClass(), handlerClass, e.plugin())));
  }

  private static String missing(Binding b, HandlerCatalog catalog) {
    if (b.tool().contains("@")) {
      return "no handler can serve "
          + b.key()
          + ": the ref "
          + b.ref()
          + " is not of the form "
          + "namespace.name[@constraint], so the runtime keeps its '@' in the tool name; drop "
          + "the @constraint, or name the tool namespace.name";
    }
    List<String> sameTool =
        catalog.entries().stream()
            .filter(e -> e.descriptor().tool().equals(b.tool()))
            .map(HandlerCatalog.Entry::key)
            .toList();
    StringBuilder s = new StringBuilder("no handler for ").append(b.key());
    if (!sameTool.isEmpty()) {
      s.append(" (this worker serves ").append(String.join(", ", sameTool)).append(')');
    }
    s.append(": ")
        .append(
            b.version()
                .map(v -> "add a plugin that serves " + b.tool() + " version " + v)
                .orElse(
                    "add a plugin whose handler for "
                        + b.tool()
                        + " leaves its version unset "
                        + "(advertised as default)"));
    if (!sameTool.isEmpty()) {
      s.append(", or bind a version served here");
    }
    if (b.version().isEmpty()) {
      b.constraint()
          .ifPresent(
              c ->
                  s.append("; the ref's @")
                      .append(c)
                      .append(
                          " is not part "
                              + "of the key: a binding without a version is routed to @default"));
    }
    return s.toString();
  }

  private static String mismatch(Optional<String> declared, String handler, String plugin) {
    return declared
        .map(
            d ->
                "the manifest declares "
                    + d
                    + ", the handler ("
                    + plugin
                    + ") declares "
                    + handler
                    + ": the runtime goes by the manifest's class (after an indeterminate "
                    + "outcome it re-dispatches only read_only, idempotent_write and unclassified "
                    + "calls); make them agree")
        .orElse(
            "the manifest declares no side_effect_class, the handler ("
                + plugin
                + ") declares "
                + handler
                + ": the runtime treats the call as unclassified (and may "
                + "re-dispatch it after an indeterminate outcome); declare side_effect_class: "
                + handler);
  }

  /** True when every binding routed to workers is served with the declared class. */
  public boolean ok() {
    return rows.stream().allMatch(r -> r.status() == Status.SERVED || r.status() == Status.SKIPPED);
  }

  /** How many rows have each status (every status present, zero or not). */
  public Map<Status, Long> counts() {
    Map<Status, Long> counts = new EnumMap<>(Status.class);
    for (Status s : Status.values()) {
      counts.put(s, rows.stream().filter(r -> r.status() == s).count());
    }
    return counts;
  }

  /**
   * The manifest, then one row per binding (document, line, key or ref, status, and the plugin or
   * the reason), then {@code ok} or {@code not ok} with the counts.
   */
  public String table() {
    StringBuilder out = new StringBuilder("manifest: ").append(manifest).append("\n\n");
    if (rows.isEmpty()) {
      out.append("no tool bindings\n");
    } else {
      List<List<String>> lines = new ArrayList<>();
      lines.add(List.of("DOC", "LINE", "BINDING", "STATUS", "DETAIL"));
      for (Row r : rows) {
        Binding b = r.binding();
        lines.add(
            List.of(
                Integer.toString(b.document()),
                Integer.toString(b.line()),
                r.key().orElse(b.ref()),
                r.status().wireName(),
                r.reason().or(r::plugin).orElse("")));
      }
      TextColumns.append(out, lines);
    }
    String counts =
        counts().entrySet().stream()
            .filter(e -> e.getValue() > 0)
            .map(e -> e.getValue() + " " + e.getKey().wireName())
            .collect(Collectors.joining(", "));
    return out.append('\n')
        .append(ok() ? "ok" : "not ok")
        .append(counts.isEmpty() ? "" : ": " + counts)
        .append('\n')
        .toString();
  }

  /**
   * {@code {"manifest": path, "bindings": [{"document", "ref", "key", "status", "plugin",
   * "declared_side_effect_class", "handler_side_effect_class", "reason"}...], "ok": bool}}; absent
   * values are {@code null}.
   */
  public String json() {
    ObjectNode root = JSON.createObjectNode();
    root.put("manifest", manifest);
    ArrayNode bindings = root.putArray("bindings");
    for (Row r : rows) {
      Binding b = r.binding();
      ObjectNode o = bindings.addObject();
      o.put("document", b.document());
      o.put("ref", b.ref());
      o.put("key", r.key().orElse(null));
      o.put("status", r.status().wireName());
      o.put("plugin", r.plugin().orElse(null));
      o.put("declared_side_effect_class", b.sideEffectClass().orElse(null));
      o.put("handler_side_effect_class", r.handlerSideEffectClass().orElse(null));
      o.put("reason", r.reason().orElse(null));
    }
    root.put("ok", ok());
    try {
      return JSON.writeValueAsString(root) + "\n";
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a tree of strings and numbers always serializes", e);
    }
  }
}
