package dev.phrony.worker.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;
import dev.phrony.worker.HostJson;
import dev.phrony.worker.config.HandlerOverrides;
import dev.phrony.worker.config.LayeredDefaults;
import dev.phrony.worker.config.Source;
import dev.phrony.worker.config.WorkerConfig;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code phrony-worker config}: the configuration {@code run} would use with the same flags,
 * environment and config file, and where each value came from. Secrets are never printed.
 */
@Command(
    name = "config",
    mixinStandardHelpOptions = true,
    description = {
      "Prints the effective configuration of 'run' and where each value came from "
          + "(flag, env, file or default). Give it the same flags as 'run'.",
      "",
      "Precedence, for every setting: flag > environment variable > config file > built-in "
          + "default. Secrets (the bearer token) are shown as <redacted>."
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:the configuration is valid",
      "1:a problem with a flag, an environment variable or the config file (each is named)"
    })
final class ConfigCommand implements Callable<Integer> {

  enum Format {
    yaml,
    json
  }

  @Mixin private ConfigOption configOption;

  @Mixin private RunOptions options;

  @Option(
      names = "--format",
      paramLabel = "FORMAT",
      defaultValue = "yaml",
      description = "Output format: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
  private Format format;

  @CommandLine.Spec private CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws JsonProcessingException {
    WorkerConfig config = WorkerSettings.resolve(options, spec);
    PrintWriter out = spec.commandLine().getOut();
    out.print(render(config, spec, format));
    out.flush();
    return ExitCodes.OK;
  }

  static String render(WorkerConfig config, CommandLine.Model.CommandSpec spec, Format format)
      throws JsonProcessingException {
    JsonNodeFactory f = JsonNodeFactory.instance;
    ObjectNode root = f.objectNode();
    ObjectNode file = root.putObject("config_file");
    if (spec.defaultValueProvider() instanceof LayeredDefaults layers) {
      LayeredDefaults.Location at = layers.location(spec);
      file.put("path", at.path().map(Object::toString).orElse(null));
      file.put("found", config.configFile().isPresent());
      file.put("named_by", at.namedBy());
    }
    ObjectNode settings = root.putObject("settings");
    for (WorkerConfig.Setting s : config.settings()) {
      ObjectNode n = settings.putObject(s.key());
      n.putPOJO("value", s.value());
      n.put("source", s.source().kind().label());
      if (s.source().kind() != Source.Kind.DEFAULT) {
        n.put("from", s.source().origin());
      }
      n.put("env", s.env());
    }
    ArrayNode handlers = root.putArray("handlers");
    for (HandlerOverrides.Rule r : config.handlers()) {
      ObjectNode n = handlers.addObject();
      n.put("handler", r.pattern());
      n.put("setting", r.setting());
      n.put("value", r.value());
      n.put("source", r.source().kind().label());
      n.put("from", r.source().origin());
    }
    ObjectMapper mapper =
        format == Format.json
            ? HostJson.MAPPER
            : new ObjectMapper(
                YAMLFactory.builder()
                    .disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER)
                    .enable(YAMLGenerator.Feature.MINIMIZE_QUOTES)
                    .build());
    String text = mapper.writeValueAsString(root);
    return text.endsWith("\n") ? text : text + "\n";
  }
}
