package dev.phrony.worker.contract;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * What a manifest file loads to, as the runtime would load it: one agent for an agent manifest; for
 * a {@code kind: Bundle}, its root agent and every member agent it reaches through {@code
 * spec.agents} bundle paths, each resolved against its own folder.
 *
 * @param file the file as given
 * @param bundle for a {@code kind: Bundle}, its {@code namespace.name@version}
 * @param agents the agents, root first
 * @param problems file- and bundle-level problems (each agent and binding has its own)
 */
public record LoadedManifest(
    Path file, Optional<String> bundle, List<ResolvedAgent> agents, List<Problem> problems) {

  public LoadedManifest {
    agents = List.copyOf(agents);
    problems = List.copyOf(problems);
  }

  /** Every binding of every agent, in order. */
  public List<ResolvedBinding> bindings() {
    return agents.stream().flatMap(a -> a.bindings().stream()).toList();
  }

  /**
   * Every problem: the manifest's, then each agent's bundle folder's ({@code tools/}, {@code
   * policies/}, once per folder), then each agent's and its bindings'.
   */
  public List<Problem> allProblems() {
    Stream<Problem> folders =
        agents.stream().map(ResolvedAgent::bundle).distinct().flatMap(b -> b.problems().stream());
    return Stream.of(
            problems.stream(), folders, agents.stream().flatMap(a -> a.allProblems().stream()))
        .flatMap(s -> s)
        .toList();
  }

  /** True when the runtime would refuse something. */
  public boolean hasErrors() {
    return allProblems().stream().anyMatch(Problem::isError);
  }
}
