package dev.phrony.worker.cli;

import dev.phrony.worker.plugin.LoadReport;
import dev.phrony.worker.plugin.LoadResult;
import dev.phrony.worker.plugin.PluginLoader;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code phrony-worker list-handlers}: what this host would advertise, and every load problem. */
@Command(name = "list-handlers", mixinStandardHelpOptions = true,
    description = {
        "Lists the handlers this worker would advertise, and every plugin load problem.",
        "",
        "Loads the plugins as 'run' would and prints one row per tool@version (contract "
            + "version, max concurrency, side-effect class, plugin, descriptor hash), then each "
            + "plugin that could not be loaded with the reason, then the image digest."},
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
        "0:every plugin loaded",
        "1:usage error (bad flag, missing or unreadable plugins directory)",
        "3:some plugins had problems (the handlers of the others are still listed)"})
final class ListHandlersCommand implements Callable<Integer> {

  @Mixin
  private PluginsOption plugins;

  @Mixin
  private FormatOption format;

  @CommandLine.Spec
  private CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    LoadResult result = new PluginLoader().load(plugins.pluginsDir());
    PrintWriter out = spec.commandLine().getOut();
    out.print(format.json() ? LoadReport.json(result) : LoadReport.table(result));
    out.flush();
    // Listing problems is this command's purpose, so --strict changes nothing here: any problem
    // already fails it.
    return result.hasProblems() ? ExitCodes.PROBLEMS : ExitCodes.OK;
  }
}
