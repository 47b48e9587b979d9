package dev.phrony.worker.plugin;

import java.util.List;
import java.util.Objects;

/**
 * What {@link PluginLoader#load} found: the handlers to serve, every problem, and the plugins
 * seen. Problems never stop the other plugins from loading; whether any problem is fatal (as
 * with {@code --strict}) is the caller's decision.
 *
 * @param catalog the handlers of every plugin that loaded cleanly, minus refused duplicate keys
 * @param problems every problem, sorted by plugin path
 * @param plugins every plugin found whose jars could be read, loaded or not, sorted by path
 */
public record LoadResult(HandlerCatalog catalog, List<LoadProblem> problems,
    List<PluginSource> plugins) {

  public LoadResult {
    Objects.requireNonNull(catalog, "catalog");
    problems = List.copyOf(problems);
    plugins = List.copyOf(plugins);
  }

  public boolean hasProblems() {
    return !problems.isEmpty();
  }

  /** {@link ImageDigest#of(java.util.Collection)} of {@link #plugins()}. */
  public String imageDigest() {
    return ImageDigest.of(plugins);
  }
}
