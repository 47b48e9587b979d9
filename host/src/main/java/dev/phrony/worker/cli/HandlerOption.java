package dev.phrony.worker.cli;

import dev.phrony.worker.config.ConfigFile;
import dev.phrony.worker.config.HandlerOverrides;
import dev.phrony.worker.config.Source;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import picocli.CommandLine.Option;

/**
 * {@code --handler KEY:SETTING=VALUE} (repeatable): an operator's settings per handler, as a
 * picocli mixin of the commands that load plugins for a worker ({@code run}, {@code config}, {@code
 * list-handlers}). The same rules come from {@code PHRONY_WORKER_HANDLERS} and the {@code
 * handlers:} mapping of {@code worker.yaml}; see {@link HandlerOverrides}.
 */
final class HandlerOption {
  @Option(
      names = HandlerOverrides.FLAG,
      paramLabel = "KEY:SETTING=VALUE",
      description =
          "A handler's setting over its plugin's: max-concurrency, enabled or "
              + "deadline, for a tool@version or a pattern (e.g. 'payments.*:max-concurrency=2', "
              + "'echo@default:enabled=false', 'weather.*:deadline=10s'). Repeatable; also $"
              + HandlerOverrides.ENV
              + " (rules separated by ';') and handlers: in worker.yaml.")
  List<String> flags = new ArrayList<>();

  /** The rules of the file, then the environment, then the flags; problems are added. */
  List<HandlerOverrides.Rule> rules(ConfigFile file, Optional<String> env, List<String> problems) {
    List<HandlerOverrides.Rule> rules = new ArrayList<>(file.handlers());
    env.ifPresent(
        text ->
            rules.addAll(
                HandlerOverrides.parse(text, Source.env(HandlerOverrides.ENV), 0, problems)));
    int order = 0;
    for (String flag : flags) {
      List<HandlerOverrides.Rule> parsed =
          HandlerOverrides.parse(flag, Source.flag(HandlerOverrides.FLAG), order, problems);
      order += parsed.size();
      rules.addAll(parsed);
    }
    return rules;
  }
}
