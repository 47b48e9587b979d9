package dev.phrony.worker.contract;

import java.nio.file.Path;
import java.util.Optional;

/**
 * A {@code kind: Policy} document of a bundle, as far as resolution needs it: its identity, what it
 * applies to and its decision. (Evaluating policies is the runtime's, not the worker's.)
 *
 * @param file where it is
 * @param line where the document starts
 * @param namespace {@code metadata.namespace}
 * @param name {@code metadata.name}
 * @param scope {@code spec.scope}, e.g. {@code tool:payments.process-payment}
 * @param decision {@code spec.decision.type}, e.g. {@code require_approval}
 */
public record PolicyDocument(
    Path file,
    int line,
    String namespace,
    String name,
    Optional<String> scope,
    Optional<String> decision) {

  /** {@code namespace.name}, the id agents name it by. */
  public String id() {
    return namespace + "." + name;
  }
}
