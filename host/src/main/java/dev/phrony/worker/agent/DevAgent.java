package dev.phrony.worker.agent;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

/**
 * An agent {@code dev} runs: its identity, the tool bindings its model calls by wire name, its
 * policies and its scripted model.
 *
 * @param file its manifest
 * @param namespace {@code metadata.namespace}
 * @param name {@code metadata.name}
 * @param version {@code metadata.version}
 * @param modelName {@code spec.model.name} (the provider is {@code stub})
 * @param bindings by wire name (the name a script's {@code tool_call} gives)
 * @param policies what is decided before each dispatch
 * @param script the model's turns
 */
public record DevAgent(
    Path file,
    String namespace,
    String name,
    String version,
    String modelName,
    Map<String, Binding> bindings,
    Policies policies,
    StubScript script) {

  /** The only model provider dev runs. */
  public static final String STUB = "stub";

  public DevAgent {
    bindings = Map.copyOf(bindings);
  }

  /**
   * Where a tool call goes.
   *
   * @param wireName the name the model calls
   * @param tool the routing key's tool (the binding's ref without its constraint)
   * @param version the routing key's version ({@code default} when none is known)
   * @param sideEffectClass the binding's class, or empty
   */
  public record Binding(String wireName, String tool, String version, String sideEffectClass) {
    /** {@code tool@version}. */
    public String key() {
      return tool + "@" + version;
    }
  }

  /** {@code namespace/name@version}. */
  public String ref() {
    return namespace + "/" + name + "@" + version;
  }

  /**
   * The id its sessions and calls carry as {@code agent_version_id}: a UUID, as the runtime's (the
   * row of the published version), derived from {@link #ref()} so that it is the same each time
   * {@code dev} loads the agent.
   */
  public String agentVersionId() {
    return UUID.nameUUIDFromBytes(("phrony-worker-dev:" + ref()).getBytes(StandardCharsets.UTF_8))
        .toString();
  }

  /** The binding the model calls {@code wireName}. */
  public Optional<Binding> binding(String wireName) {
    return Optional.ofNullable(bindings.get(wireName));
  }
}
