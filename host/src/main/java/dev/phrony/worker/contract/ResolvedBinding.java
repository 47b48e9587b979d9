package dev.phrony.worker.contract;

import com.fasterxml.jackson.databind.JsonNode;
import dev.phrony.worker.api.ToolDescriptor;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One tool binding of an agent after its bundle is resolved: where the runtime sends its calls
 * ({@link #key()} for a worker), the name the model calls it by, and the contract it presents
 * (side-effect class, description, input schema, policies), each with where it came from.
 *
 * @param file the agent manifest it is written in
 * @param path where in that manifest, e.g. {@code spec.tools[0]} or {@code spec.agents[1]}
 * @param line the line it starts on
 * @param ref the ref as written
 * @param route who serves its calls
 * @param target for MCP and nested-agent bindings, what the runtime calls instead of a worker
 * @param tool the tool name calls carry: the ref without its {@code @constraint} when the ref is
 *     {@code namespace.name[@constraint]}, else the ref whole
 * @param constraint the ref's semver constraint
 * @param version the version of the key: the binding's own, else its Tool document's
 * @param versionFrom where {@code version} is written
 * @param wireName the tool name the model sees ({@code as}, else the ref made model-safe)
 * @param sideEffectClass the binding's class, else its Tool document's
 * @param sideEffectClassFrom where it is written
 * @param description the binding's, else its Tool document's
 * @param inputSchema the schema the model is given: the binding's, else its Tool document's
 * @param inputSchemaFrom the file it is in (a {@code schemas/} file, or the document it is inline
 *     in)
 * @param toolDocument the Tool document of {@code tools/} its ref names, if any
 * @param policies the Policy documents it names (its own, else its Tool document's defaults)
 * @param problems what the runtime would refuse about it, and warnings
 */
public record ResolvedBinding(
    Path file,
    String path,
    int line,
    String ref,
    Route route,
    String target,
    String tool,
    Optional<String> constraint,
    Optional<String> version,
    Optional<Origin> versionFrom,
    String wireName,
    Optional<String> sideEffectClass,
    Optional<Origin> sideEffectClassFrom,
    Optional<String> description,
    Optional<JsonNode> inputSchema,
    Optional<Path> inputSchemaFrom,
    Optional<ToolDocument> toolDocument,
    List<PolicyDocument> policies,
    List<Problem> problems) {

  /** Who serves a binding's calls. */
  public enum Route {
    /** A worker that advertises the binding's {@link #key()}. */
    WORKER,
    /** The runtime's own MCP client ({@code mcp:} on the binding). */
    MCP,
    /** A child agent session ({@code agent:} on the binding, or a {@code spec.agents} entry). */
    NESTED_AGENT
  }

  /**
   * Where a value is written.
   *
   * @param file the file
   * @param line the line
   * @param toolDocument true when it is a Tool document of {@code tools/}, false for the binding
   */
  public record Origin(Path file, int line, boolean toolDocument) {
    /** {@code FILE:LINE}. */
    @Override
    public String toString() {
      return file + ":" + line;
    }
  }

  public ResolvedBinding {
    Objects.requireNonNull(route, "route");
    policies = List.copyOf(policies);
    problems = List.copyOf(problems);
  }

  /** The routing key {@code tool@version}, {@code default} when no version is known. */
  public String key() {
    return tool + "@" + version.orElse(ToolDescriptor.DEFAULT_VERSION);
  }

  /** The same binding, served elsewhere: {@code route} and {@code target}. */
  ResolvedBinding routedTo(Route route, String target) {
    return copy(route, target, problems);
  }

  /** The same binding with {@code more} problems. */
  ResolvedBinding withProblems(List<Problem> more) {
    List<Problem> all = new java.util.ArrayList<>(problems);
    all.addAll(more);
    return copy(route, target, all);
  }

  private ResolvedBinding copy(Route route, String target, List<Problem> problems) {
    return new ResolvedBinding(
        file,
        path,
        line,
        ref,
        route,
        target,
        tool,
        constraint,
        version,
        versionFrom,
        wireName,
        sideEffectClass,
        sideEffectClassFrom,
        description,
        inputSchema,
        inputSchemaFrom,
        toolDocument,
        policies,
        problems);
  }

  /** True when the runtime would refuse it. */
  public boolean hasErrors() {
    return problems.stream().anyMatch(Problem::isError);
  }
}
