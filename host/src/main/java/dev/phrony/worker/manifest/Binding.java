package dev.phrony.worker.manifest;

import dev.phrony.worker.api.ToolDescriptor;
import java.util.Objects;
import java.util.Optional;

/**
 * One tool binding of an agent manifest, and where the runtime sends its calls.
 *
 * @param document which YAML document of the file it is in, from 1
 * @param path where it is in that document, e.g. {@code spec.tools[2]}
 * @param line the line it starts on, from 1
 * @param ref the binding's {@code ref} as written (without surrounding blanks)
 * @param version the binding's {@code version}, if it has one
 * @param sideEffectClass the binding's {@code side_effect_class}, if it has one
 * @param route who serves its calls
 * @param target for {@link Route#MCP} and {@link Route#NESTED_AGENT}: what the runtime calls
 *     instead of a worker, in words (e.g. {@code MCP server search}); empty for {@link
 *     Route#WORKER}
 */
public record Binding(
    int document,
    String path,
    int line,
    String ref,
    Optional<String> version,
    Optional<String> sideEffectClass,
    Route route,
    String target) {

  /** Who serves a binding's calls. */
  public enum Route {
    /** A worker that advertises the binding's {@link #key()}. */
    WORKER,
    /** The runtime's own MCP client ({@code mcp:} on the binding). */
    MCP,
    /** A child agent session ({@code agent:} on the binding, or a {@code spec.agents} entry). */
    NESTED_AGENT
  }

  public Binding {
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(ref, "ref");
    Objects.requireNonNull(version, "version");
    Objects.requireNonNull(sideEffectClass, "sideEffectClass");
    Objects.requireNonNull(route, "route");
    Objects.requireNonNull(target, "target");
  }

  /**
   * The tool name the runtime routes by, derived from {@link #ref()} as the runtime derives it: a
   * ref of the form {@code namespace.name[@constraint]} loses its {@code @constraint}; any other
   * ref is used whole (so {@code echo@^1} keeps its {@code @^1}).
   */
  public String tool() {
    return tool(ref);
  }

  /** The semver constraint after the last {@code @} of a {@code namespace.name@constraint} ref. */
  public Optional<String> constraint() {
    String r = ref.strip();
    String tool = tool(r);
    return tool.equals(r)
        ? Optional.empty()
        : Optional.of(r.substring(r.lastIndexOf('@') + 1).strip()).filter(c -> !c.isEmpty());
  }

  /** The routing key: {@code tool@version}, with {@code default} when the binding has none. */
  public String key() {
    return tool() + "@" + version.orElse(ToolDescriptor.DEFAULT_VERSION);
  }

  /** Mirrors the runtime's {@code ToolBinding.DispatchRef} for a binding without an agent. */
  static String tool(String ref) {
    String r = ref.strip();
    int at = r.lastIndexOf('@');
    String name = at > 0 ? r.substring(0, at).strip() : r;
    int dot = name.indexOf('.');
    return dot <= 0 || dot >= name.length() - 1 ? r : name;
  }
}
