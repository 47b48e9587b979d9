package dev.phrony.worker.cli;

import dev.phrony.worker.config.ConfigException;
import dev.phrony.worker.config.ConfigFile;
import dev.phrony.worker.config.HandlerOverrides;
import dev.phrony.worker.config.LayeredDefaults;
import dev.phrony.worker.plugin.LoadResult;
import dev.phrony.worker.plugin.PluginLoader;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code phrony-worker list-handlers}: what this host would advertise, and every load problem. */
@Command(
    name = "list-handlers",
    mixinStandardHelpOptions = true,
    description = {
      "Lists the handlers this worker would advertise, and every plugin load problem.",
      "",
      "Loads the plugins as 'run' would and prints one row per tool@version (contract "
          + "version, max concurrency, side-effect class, plugin, descriptor hash), then the "
          + "operator's settings per handler (--handler, $PHRONY_WORKER_HANDLERS, handlers: "
          + "in worker.yaml) with where each came from, then each plugin that could not be "
          + "loaded with the reason, then the image digest."
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:every plugin loaded",
      "1:usage error (bad flag, missing or unreadable plugins directory)",
      "3:some plugins had problems (the handlers of the others are still listed)"
    })
final class ListHandlersCommand implements Callable<Integer> {

  @Mixin private PluginsOption plugins;

  @Mixin private FormatOption format;

  @Mixin private ConfigOption configOption;

  @Mixin private HandlerOption handlers;

  @Option(
      names = "--worker",
      paramLabel = "URL",
      description =
          "Ask a running worker what it serves now (its HTTP endpoint, e.g. "
              + "http://127.0.0.1:9464) instead of loading the plugins folder here.")
  private String worker;

  @CommandLine.Spec private CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    if (worker != null) {
      return fromWorker();
    }
    LoadResult result = new PluginLoader().load(plugins.pluginsDir());
    // The handler settings of run's worker.yaml, the environment and the flags.
    LayeredDefaults layers =
        spec.defaultValueProvider() instanceof LayeredDefaults l
            ? l
            : LayeredDefaults.fromSystem().readingSettingsOf(RunOptions.settings());
    ConfigFile file = layers.file(spec);
    List<String> problems = new ArrayList<>(file.problems());
    List<HandlerOverrides.Rule> rules =
        handlers.rules(file, layers.env(HandlerOverrides.ENV), problems);
    if (!problems.isEmpty()) {
      throw new ConfigException(problems);
    }
    HandlerOverrides.Applied applied = HandlerOverrides.apply(rules, result.catalog());
    PrintWriter out = spec.commandLine().getOut();
    out.print(
        format.json()
            ? LoadReport.json(result, applied.effective(), applied.warnings())
            : LoadReport.table(result, applied.effective(), applied.warnings()));
    out.flush();
    // Listing problems is this command's purpose, so --strict changes nothing here: any problem
    // already fails it.
    return result.hasProblems() ? ExitCodes.PROBLEMS : ExitCodes.OK;
  }

  /** {@code GET /handlers} of a running worker, printed as this command prints a load. */
  private int fromWorker() {
    String body = WorkerHandlers.fetch(worker);
    PrintWriter out = spec.commandLine().getOut();
    out.print(format.json() ? body : WorkerHandlers.table(body));
    out.flush();
    return WorkerHandlers.hasProblems(body) ? ExitCodes.PROBLEMS : ExitCodes.OK;
  }
}
