package dev.phrony.worker.cli;

import dev.phrony.worker.Distribution;
import dev.phrony.worker.config.Configurable;
import dev.phrony.worker.plugin.LoadResult;
import dev.phrony.worker.plugin.PluginLoader;
import java.io.PrintWriter;
import java.nio.file.Path;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * {@code --plugins DIR} and {@code --strict}, for every command that loads plugins ({@code @Mixin
 * PluginsOption plugins;}). Resolves the default plugins directory in one place.
 */
@Configurable
public final class PluginsOption {

  /** Set by {@code bin/phrony-worker} to the distribution's root folder. */
  @Option(
      names = "--plugins",
      paramLabel = "DIR",
      description =
          "Plugins directory: one jar, or one folder of jars (with lib/), per plugin. "
              + "Default: the plugins/ folder of this distribution, or ./plugins when not run from "
              + "one.")
  private Path plugins;

  @Option(
      names = "--strict",
      description = "Treat any plugin problem as a failure (exit status 3).")
  private boolean strict;

  /** The directory given with {@code --plugins}, or the default. */
  public Path pluginsDir() {
    return plugins != null
        ? plugins
        : defaultPluginsDir(System.getProperty(Distribution.HOME_PROPERTY));
  }

  /** The plugins, loaded as {@code run} loads them; each load problem one line on stderr. */
  LoadResult loadListingProblems(CommandLine.Model.CommandSpec spec) {
    LoadResult loaded = new PluginLoader().load(pluginsDir());
    PrintWriter err = spec.commandLine().getErr();
    loaded
        .problems()
        .forEach(
            p ->
                err.println(
                    spec.qualifiedName()
                        + ": plugin "
                        + p.plugin()
                        + " not loaded: "
                        + p.reason()));
    err.flush();
    return loaded;
  }

  /** Whether any plugin problem must fail the command. */
  public boolean strict() {
    return strict;
  }

  /** {@code <phronyHome>/plugins}, or {@code ./plugins} without a home. */
  static Path defaultPluginsDir(String phronyHome) {
    return phronyHome == null || phronyHome.isBlank()
        ? Path.of("plugins")
        : Path.of(phronyHome, "plugins");
  }
}
