package dev.phrony.worker.manifest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.phrony.worker.HostJson;
import dev.phrony.worker.contract.Problem;
import dev.phrony.worker.contract.ResolvedBinding;
import dev.phrony.worker.contract.ResolvedBinding.Route;
import dev.phrony.worker.contract.Semver;
import dev.phrony.worker.manifest.CheckReport.Row;
import dev.phrony.worker.manifest.CheckReport.Status;
import dev.phrony.worker.plugin.HandlerCatalog;
import java.io.IOException;
import java.util.List;
import java.util.Optional;

/** One binding against the handlers of a catalog: its {@link Row}, with the reason in words. */
final class Verdict {
  private static final ObjectMapper JSON = HostJson.MAPPER;

  private Verdict() {}

  static Row of(String agent, ResolvedBinding b, HandlerCatalog catalog) {
    if (b.route() != Route.WORKER) {
      return row(agent, b, Status.SKIPPED, null, "routed to " + b.target() + ", not to a worker");
    }
    Optional<Problem> error = b.problems().stream().filter(Problem::isError).findFirst();
    if (error.isPresent()) {
      Status s =
          error.get().code().equals(Problem.VERSION_OUTSIDE_CONSTRAINT)
              ? Status.VERSION_OUTSIDE_CONSTRAINT
              : Status.MANIFEST_ERROR;
      return row(agent, b, s, null, "the runtime refuses it: " + error.get().message());
    }
    Optional<HandlerCatalog.Entry> found =
        catalog.entries().stream().filter(e -> e.key().equals(b.key())).findFirst();
    if (found.isEmpty()) {
      return row(agent, b, Status.MISSING, null, missing(b, catalog));
    }
    HandlerCatalog.Entry e = found.get();
    String handlerClass = e.descriptor().sideEffectClass().wireName();
    List<SchemaDiff.Finding> findings = schemaFindings(b, e);
    Status status;
    String reason = null;
    if (!b.sideEffectClass().map(handlerClass::equals).orElse(false)) {
      status = Status.CLASS_MISMATCH;
      reason = mismatch(b, handlerClass, e.plugin());
    } else if (findings.stream().anyMatch(f -> f.severity() == SchemaDiff.Severity.ERROR)) {
      status = Status.SCHEMA_MISMATCH;
      long n = findings.stream().filter(f -> f.severity() == SchemaDiff.Severity.ERROR).count();
      reason =
          "the handler ("
              + e.plugin()
              + ") refuses calls the manifest's input schema"
              + b.inputSchemaFrom().map(f -> " (" + f + ")").orElse("")
              + " allows: "
              + n
              + (n == 1 ? " difference" : " differences")
              + " below; make the schemas agree";
    } else {
      status = Status.SERVED;
    }
    return new Row(
        agent,
        b,
        status,
        Optional.of(e.plugin()),
        Optional.of(handlerClass),
        Optional.ofNullable(reason),
        findings);
  }

  private static Row row(String agent, ResolvedBinding b, Status s, String plugin, String reason) {
    return new Row(
        agent,
        b,
        s,
        Optional.ofNullable(plugin),
        Optional.empty(),
        Optional.ofNullable(reason),
        List.of());
  }

  private static List<SchemaDiff.Finding> schemaFindings(
      ResolvedBinding b, HandlerCatalog.Entry e) {
    Optional<JsonNode> handler = e.descriptor().inputSchema().flatMap(Verdict::parse);
    if (handler.isEmpty()) {
      return List.of();
    }
    if (b.inputSchema().isEmpty()) {
      return List.of(
          new SchemaDiff.Finding(
              SchemaDiff.Severity.WARNING,
              "",
              "the manifest gives the model no input schema, the handler checks calls against"
                  + " one: publish it (phrony-worker tool-manifest "
                  + e.key()
                  + ")"));
    }
    return SchemaDiff.compare(b.inputSchema().get(), handler.get());
  }

  private static Optional<JsonNode> parse(String text) {
    try {
      return Optional.of(JSON.readTree(text));
    } catch (IOException e) {
      return Optional.empty(); // the loader refuses such handlers
    }
  }

  private static String missing(ResolvedBinding b, HandlerCatalog catalog) {
    if (b.tool().contains("@")) {
      return "no handler can serve "
          + b.key()
          + ": the ref "
          + b.ref()
          + " is not of the form namespace.name[@constraint], so the runtime keeps its '@' in"
          + " the tool name; drop the @constraint, or name the tool namespace.name";
    }
    List<String> served =
        catalog.entries().stream()
            .filter(e -> e.descriptor().tool().equals(b.tool()))
            .map(e -> e.descriptor().version())
            .toList();
    StringBuilder s = new StringBuilder("no handler for ").append(b.key());
    b.versionFrom()
        .ifPresent(
            o ->
                s.append(" (version from ")
                    .append(o.toolDocument() ? "the Tool document " : "the binding, ")
                    .append(o)
                    .append(')'));
    if (!served.isEmpty()) {
      s.append("; this worker serves ")
          .append(
              served.stream()
                  .map(v -> b.tool() + "@" + v)
                  .toList()
                  .toString()
                  .replace("[", "")
                  .replace("]", ""));
    }
    s.append(": ");
    Optional<String> fits =
        b.constraint()
            .flatMap(
                c ->
                    served.stream()
                        .filter(v -> Semver.unsatisfied(b.tool(), v, c).isEmpty())
                        .findFirst());
    if (fits.isPresent() && b.versionFrom().map(o -> o.toolDocument()).orElse(false)) {
      s.append("it satisfies the ref's @")
          .append(b.constraint().get())
          .append(", so publish the Tool document with version ")
          .append(fits.get())
          .append(" (phrony-worker tool-manifest ")
          .append(b.tool())
          .append('@')
          .append(fits.get())
          .append("), or add a plugin that serves ")
          .append(b.key());
    } else if (b.version().isPresent()) {
      s.append("add a plugin that serves ")
          .append(b.tool())
          .append(" version ")
          .append(b.version().get());
      if (!served.isEmpty()) {
        s.append(", or bind a version served here");
      }
    } else {
      s.append("a binding with no tools/ entry and no version is routed to @default: add a")
          .append(" plugin whose handler for ")
          .append(b.tool())
          .append(" leaves its version unset");
      if (!served.isEmpty()) {
        s.append(", or add tools/")
            .append(b.tool())
            .append(".yaml with a served version (phrony-worker tool-manifest ")
            .append(b.tool())
            .append('@')
            .append(served.getFirst())
            .append(") and bind ")
            .append(b.tool())
            .append('@')
            .append(served.getFirst());
      }
    }
    return s.toString();
  }

  private static String mismatch(ResolvedBinding b, String handler, String plugin) {
    if (b.sideEffectClass().isEmpty()) {
      return "the manifest declares no side_effect_class (nor does a Tool document), the handler ("
          + plugin
          + ") declares "
          + handler
          + ": the runtime treats the call as unclassified (and may re-dispatch it after an"
          + " indeterminate outcome); declare side_effect_class: "
          + handler;
    }
    return "the manifest ("
        + b.sideEffectClassFrom().map(Object::toString).orElse(b.file().toString())
        + ") declares "
        + b.sideEffectClass().get()
        + ", the handler ("
        + plugin
        + ") declares "
        + handler
        + ": the runtime goes by the manifest's class (after an indeterminate outcome it"
        + " re-dispatches only read_only, idempotent_write and unclassified calls); make them"
        + " agree";
  }
}
