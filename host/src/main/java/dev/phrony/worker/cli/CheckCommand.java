package dev.phrony.worker.cli;

import dev.phrony.worker.manifest.Binding;
import dev.phrony.worker.manifest.CheckReport;
import dev.phrony.worker.manifest.ManifestReader;
import dev.phrony.worker.plugin.LoadResult;
import dev.phrony.worker.plugin.PluginLoader;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code phrony-worker check}: does every tool binding of a manifest have a handler here? */
@Command(
    name = "check",
    mixinStandardHelpOptions = true,
    description = {
      "Checks an agent manifest against the handlers this worker would advertise.",
      "",
      "For every binding the runtime routes to workers, computes the routing key as the "
          + "runtime does (the ref without any @constraint, then @ and the binding's version, "
          + "or 'default') and reports it served (and by which plugin), missing, or "
          + "class_mismatch (the handler's side-effect class differs from the manifest's). "
          + "MCP and nested-agent bindings are reported skipped. Plugin load problems are "
          + "listed on stderr."
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:every worker-routed binding is served with the same side-effect class",
      "1:usage error (bad flag; manifest missing, unreadable or malformed: file and line "
          + "named; missing plugins directory)",
      "3:some bindings are missing or differ in side-effect class (or, with --strict, "
          + "some plugins had problems)"
    })
final class CheckCommand implements Callable<Integer> {

  @Option(
      names = "--manifest",
      paramLabel = "FILE",
      required = true,
      description =
          "Agent manifest (YAML, one or more documents; kind: Agent documents are " + "checked).")
  private Path manifest;

  @Mixin private PluginsOption plugins;

  @Mixin private FormatOption format;

  @CommandLine.Spec private CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    List<Binding> bindings = new ManifestReader().read(manifest);
    LoadResult loaded = new PluginLoader().load(plugins.pluginsDir());
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

    CheckReport report = CheckReport.check(manifest.toString(), bindings, loaded.catalog());
    PrintWriter out = spec.commandLine().getOut();
    out.print(format.json() ? report.json() : report.table());
    out.flush();
    boolean failed = !report.ok() || plugins.strict() && loaded.hasProblems();
    return failed ? ExitCodes.PROBLEMS : ExitCodes.OK;
  }
}
