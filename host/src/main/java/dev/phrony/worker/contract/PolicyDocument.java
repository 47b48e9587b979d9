package dev.phrony.worker.contract;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A {@code kind: Policy} document of a bundle: its identity, what it applies to and its decision,
 * and (for dev, which evaluates policies as the runtime does) the rest of its spec as written.
 *
 * @param file where it is
 * @param line where the document starts
 * @param namespace {@code metadata.namespace}
 * @param name {@code metadata.name}
 * @param scope {@code spec.scope}, e.g. {@code tool:payments.process-payment}
 * @param decision {@code spec.decision.type}, e.g. {@code require_approval}
 * @param body the spec's conditions, allow list and decision, as JSON
 */
public record PolicyDocument(
    Path file,
    int line,
    String namespace,
    String name,
    Optional<String> scope,
    Optional<String> decision,
    Body body) {

  /**
   * What a policy says beyond its identity, each part as JSON (scalars typed as YAML types them)
   * with the line it is on, for messages.
   *
   * @param conditions {@code spec.conditions}
   * @param conditionsLine its line
   * @param allow {@code spec.allow}
   * @param decisionBody {@code spec.decision}
   * @param decisionLine its line
   */
  public record Body(
      Optional<JsonNode> conditions,
      int conditionsLine,
      Optional<JsonNode> allow,
      Optional<JsonNode> decisionBody,
      int decisionLine) {}

  /** {@code namespace.name}, the id agents name it by. */
  public String id() {
    return namespace + "." + name;
  }
}
