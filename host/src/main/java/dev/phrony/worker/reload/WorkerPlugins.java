package dev.phrony.worker.reload;

import dev.phrony.worker.config.DurationParser;
import dev.phrony.worker.config.HandlerOverrides;
import dev.phrony.worker.plugin.LoadResult;
import dev.phrony.worker.plugin.PluginLoader;
import java.nio.file.Path;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plugins a worker starts with: its folder loaded (every problem logged), and the operator's
 * per-handler settings applied (their warnings logged, and each handler they change).
 *
 * @param loaded the folder as loaded
 * @param applied the handler settings applied to it: what is served
 */
public record WorkerPlugins(LoadResult loaded, HandlerOverrides.Applied applied) {
  private static final Logger log = LoggerFactory.getLogger(WorkerPlugins.class);

  /**
   * Loads {@code dir} and applies {@code rules}.
   *
   * @throws NotStartingException if {@code strict} and a plugin has a problem
   * @throws dev.phrony.worker.plugin.PluginDirectoryException if the folder cannot be read
   */
  public static WorkerPlugins load(Path dir, boolean strict, List<HandlerOverrides.Rule> rules)
      throws NotStartingException {
    LoadResult loaded = new PluginLoader().load(dir);
    loaded.problems().forEach(p -> log.warn("plugin {} not loaded: {}", p.plugin(), p.reason()));
    if (strict && loaded.hasProblems()) {
      throw new NotStartingException(
          "--strict: "
              + loaded.problems().size()
              + " plugin problem(s), not starting (see 'list-handlers')");
    }
    HandlerOverrides.Applied applied = HandlerOverrides.apply(rules, loaded.catalog());
    applied.warnings().forEach(log::warn);
    applied
        .effective()
        .forEach(
            (key, e) -> {
              if (e.overridden()) {
                log.info(
                    "handler {}: max-concurrency {} ({}), enabled {} ({}), deadline {} ({})",
                    key,
                    e.maxConcurrency(),
                    e.maxConcurrencySource(),
                    e.enabled(),
                    e.enabledSource(),
                    e.deadline().map(DurationParser::format).orElse("none"),
                    e.deadlineSource());
              }
            });
    return new WorkerPlugins(loaded, applied);
  }
}
