package dev.phrony.worker.cli;

import dev.phrony.worker.contract.Contracts;
import dev.phrony.worker.contract.LoadedManifest;
import dev.phrony.worker.manifest.CheckReport;
import dev.phrony.worker.plugin.LoadResult;
import java.io.PrintWriter;
import java.nio.file.Path;
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
      "Checks an agent manifest (or a kind: Bundle and its member agents) against the "
          + "handlers this worker would advertise.",
      "",
      "Resolves each agent as the runtime does, against the folder it is in: a ref "
          + "namespace.name@constraint takes its version, side_effect_class, description and "
          + "input_schema from the Tool document of tools/ it names (inline, or a schemas/ "
          + "file); a binding with neither a tools/ entry nor a version is routed to @default. "
          + "Then reports each binding: served (and by which plugin), missing, "
          + "version_outside_constraint, manifest_error (the runtime would refuse it: file, line "
          + "and fix are named), class_mismatch, schema_mismatch (the handler's input schema "
          + "refuses calls the manifest's allows; JSON pointers named), or skipped (MCP and "
          + "nested-agent bindings). Rules only the handler's schema has are warnings. Plugin "
          + "load problems are listed on stderr."
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:every worker-routed binding is served with the same side-effect class and a fitting "
          + "input schema, and the runtime would refuse nothing",
      "1:usage error (bad flag; manifest missing, unreadable or malformed: file and line "
          + "named; missing plugins directory)",
      "3:some bindings are missing, differ in side-effect class or input schema, or the "
          + "runtime would refuse the manifest (or, with --strict, some plugins had problems)"
    })
final class CheckCommand implements Callable<Integer> {

  @Option(
      names = "--manifest",
      paramLabel = "FILE",
      required = true,
      description =
          "Agent manifest (kind: Agent) or bundle (kind: Bundle); as the runtime, only its "
              + "first YAML document is read.")
  private Path manifest;

  @Mixin private PluginsOption plugins;

  @Mixin private FormatOption format;

  @CommandLine.Spec private CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    LoadedManifest loadedManifest = Contracts.load(manifest);
    LoadResult loaded = plugins.loadListingProblems(spec);

    CheckReport report = CheckReport.check(manifest.toString(), loadedManifest, loaded.catalog());
    PrintWriter out = spec.commandLine().getOut();
    out.print(format.json() ? report.json() : report.table());
    out.flush();
    boolean failed = !report.ok() || plugins.strict() && loaded.hasProblems();
    return failed ? ExitCodes.PROBLEMS : ExitCodes.OK;
  }
}
