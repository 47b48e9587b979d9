package dev.phrony.worker.contract;

import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * An agent as the runtime loads it: its document, the bundle it was resolved against, every tool
 * binding resolved (those of {@code spec.tools}, then one per {@code spec.agents} entry), the
 * policies it names, and what the runtime would refuse.
 *
 * @param document the agent as written
 * @param bundle the folder it was resolved against
 * @param bindings its bindings, in file order
 * @param policies the Policy documents its {@code default_policies} name
 * @param problems agent-level problems (identity, policies); each binding has its own
 */
public record ResolvedAgent(
    AgentDocument document,
    Bundle bundle,
    List<ResolvedBinding> bindings,
    List<PolicyDocument> policies,
    List<Problem> problems) {

  public ResolvedAgent {
    bindings = List.copyOf(bindings);
    policies = List.copyOf(policies);
    problems = List.copyOf(problems);
  }

  /** The manifest file. */
  public Path file() {
    return document.file();
  }

  /** Agent-level problems, then every binding's, in file order. */
  public List<Problem> allProblems() {
    return Stream.concat(problems.stream(), bindings.stream().flatMap(b -> b.problems().stream()))
        .toList();
  }
}
