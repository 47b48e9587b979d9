package dev.phrony.worker.cli;

import dev.phrony.worker.UserErrorException;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.contract.ToolManifest;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.plugin.LoadResult;
import java.io.PrintWriter;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code phrony-worker tool-manifest TOOL@VERSION}: a served handler's kind: Tool document. */
@Command(
    name = "tool-manifest",
    mixinStandardHelpOptions = true,
    description = {
      "Prints the kind: Tool document of a handler this worker serves, as an agent bundle's "
          + "tools/ expects it: metadata (namespace, name, version), spec.description, "
          + "spec.side_effect_class and spec.input_schema.inline (the schema the worker checks "
          + "calls against; for a typed handler, generated from its argument record).",
      "",
      "Save it as tools/NAMESPACE.NAME.yaml beside the agent manifest; a binding "
          + "'ref: NAMESPACE.NAME@VERSION' then resolves to this handler's key."
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:the document was printed",
      "1:usage error (no handler serves the key, its tool is not namespace.name, a bad "
          + "plugins directory)",
      "3:with --strict, some plugins had problems"
    })
final class ToolManifestCommand implements Callable<Integer> {

  enum Format {
    yaml,
    json
  }

  @Parameters(
      index = "0",
      paramLabel = "TOOL@VERSION",
      description = "The handler's key, e.g. payments.process-payment@1.0.0 (no @: @default).")
  private String key;

  @Option(
      names = "--format",
      paramLabel = "FORMAT",
      defaultValue = "yaml",
      description = "Output format: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
  private Format format;

  @Mixin private PluginsOption plugins;

  @CommandLine.Spec private CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    LoadResult loaded = plugins.loadListingProblems(spec);
    PrintWriter err = spec.commandLine().getErr();
    String k = key.contains("@") ? key.strip() : key.strip() + "@" + ToolDescriptor.DEFAULT_VERSION;
    Optional<HandlerCatalog.Entry> entry =
        loaded.catalog().entries().stream().filter(e -> e.key().equals(k)).findFirst();
    if (entry.isEmpty()) {
      String served =
          loaded.catalog().entries().stream()
              .map(HandlerCatalog.Entry::key)
              .collect(Collectors.joining(", "));
      throw new UserErrorException(
          "no handler serves "
              + k
              + " in "
              + plugins.pluginsDir()
              + ": name one of "
              + (served.isEmpty() ? "(none: the plugins directory serves nothing)" : served));
    }
    ToolDescriptor d = entry.get().descriptor();
    String text;
    try {
      text = format == Format.json ? ToolManifest.json(d) : ToolManifest.yaml(d);
    } catch (IllegalArgumentException e) {
      throw new UserErrorException(k + ": " + e.getMessage(), e);
    }
    PrintWriter out = spec.commandLine().getOut();
    out.print(text);
    out.flush();
    if (d.version().equals(ToolDescriptor.DEFAULT_VERSION)) {
      err.println(
          spec.qualifiedName()
              + ": note: version 'default' is not semver, so only a binding without a"
              + " constraint ('ref: "
              + d.tool()
              + "') resolves to it");
      err.flush();
    }
    return plugins.strict() && loaded.hasProblems() ? ExitCodes.PROBLEMS : ExitCodes.OK;
  }
}
