package dev.phrony.worker.config;

import dev.phrony.worker.Distribution;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * The environment and the config file under the command line, for every {@linkplain Configurable
 * setting} alike: picocli asks this provider for the value of each option the command line did not
 * give, after the command line is parsed; it answers from the environment, else from the config
 * file, else nothing (and the option's own {@code defaultValue} applies). So the precedence is flag
 * > env > file > default for every setting, with no list of settings kept here.
 *
 * <p>The config file is {@code --config FILE} if given, else {@code $PHRONY_WORKER_CONFIG}, else
 * {@code <phrony.home>/conf/worker.yaml} of the distribution; only the last may be missing.
 *
 * <p>It never throws at picocli (that would break {@code --help} over a bad file): a bad value is
 * not supplied, and every problem is kept for {@link #problems()}, which the command reports before
 * it does anything.
 */
public final class LayeredDefaults implements CommandLine.IDefaultValueProvider {
  public static final String CONFIG_OPTION = "--config";
  public static final String CONFIG_ENV = "PHRONY_WORKER_CONFIG";

  /** A value this provider gave, and from where. */
  public record Supplied(String text, Source source) {}

  /** Which config file is read, and whether it was named explicitly. */
  public record Location(Optional<Path> path, boolean explicit, String namedBy) {}

  private final Map<String, String> env;
  private final Optional<Path> home;
  private final Map<String, Supplied> supplied = new HashMap<>();
  private final List<String> problems = new ArrayList<>();
  private Location location;
  private ConfigFile file;
  private CommandSpec settingsOf;

  /**
   * @param env the process environment
   * @param home the distribution's root ({@code phrony.home}), where the default {@code
   *     conf/worker.yaml} lives; empty when not run from a distribution
   */
  public LayeredDefaults(Map<String, String> env, Optional<Path> home) {
    this.env = Map.copyOf(env);
    this.home = home;
  }

  /** From the real environment and the {@code phrony.home} system property. */
  public static LayeredDefaults fromSystem() {
    String h = System.getProperty(Distribution.HOME_PROPERTY);
    return new LayeredDefaults(
        System.getenv(),
        h == null || h.isBlank() ? Optional.empty() : Optional.of(Path.of(h.strip())));
  }

  @Override
  public String defaultValue(ArgSpec arg) {
    if (!(arg instanceof OptionSpec option) || !Settings.isSetting(option)) {
      return null;
    }
    String key = Settings.key(option);
    String envName = Settings.envName(option);
    String fromEnv = env.get(envName);
    if (fromEnv != null && !fromEnv.isBlank()) {
      String text = fromEnv.strip();
      Optional<String> wrong = Settings.check(option, text);
      if (wrong.isPresent()) {
        problems.add(envName + ": " + wrong.get());
        return null;
      }
      supplied.put(key, new Supplied(text, Source.env(envName)));
      return text;
    }
    ConfigFile f = file(option.command());
    Optional<ConfigFile.Value> v = f.get(key);
    if (v.isPresent()) {
      supplied.put(key, new Supplied(v.get().text(), Source.file(f.at(v.get().line()))));
      return v.get().text();
    }
    return null;
  }

  /**
   * Reads the config file with the settings of {@code command} rather than those of the command
   * this provider serves: for a command that reads another's file ({@code list-handlers} reads
   * {@code run}'s, for its plugins and handler settings). Returns this provider.
   */
  public LayeredDefaults readingSettingsOf(CommandSpec command) {
    this.settingsOf = command;
    return this;
  }

  /** What this provider supplied for {@code key}, if anything. */
  public Optional<Supplied> supplied(String key) {
    return Optional.ofNullable(supplied.get(key));
  }

  /**
   * The config file of {@code command}, read once (so its unknown keys are reported even when the
   * command line sets everything).
   */
  public ConfigFile file(CommandSpec command) {
    if (file == null) {
      Location at = location(command);
      Map<String, OptionSpec> settings = new LinkedHashMap<>();
      Settings.of(settingsOf != null ? settingsOf : command)
          .forEach(o -> settings.put(Settings.key(o), o));
      file =
          at.path()
              .map(p -> ConfigFile.load(p, settings, at.explicit(), at.namedBy()))
              .orElseGet(ConfigFile::none);
      problems.addAll(file.problems());
    }
    return file;
  }

  /** Where the config file of {@code command} is looked for. */
  public Location location(CommandSpec command) {
    if (location == null) {
      OptionSpec flag = command.findOption(CONFIG_OPTION);
      String fromEnv = env.get(CONFIG_ENV);
      if (flag != null && !flag.originalStringValues().isEmpty()) {
        location =
            new Location(
                Optional.of(Path.of(flag.originalStringValues().getLast())), true, CONFIG_OPTION);
      } else if (fromEnv != null && !fromEnv.isBlank()) {
        location = new Location(Optional.of(Path.of(fromEnv.strip())), true, CONFIG_ENV);
      } else {
        location =
            new Location(home.map(h -> h.resolve("conf").resolve("worker.yaml")), false, "default");
      }
    }
    return location;
  }

  /** Every problem with the environment or the config file found so far. */
  public List<String> problems() {
    return List.copyOf(problems);
  }

  /** The environment this provider reads (for the few settings that are not options). */
  public Optional<String> env(String name) {
    String v = env.get(name);
    return v == null || v.isBlank() ? Optional.empty() : Optional.of(v.strip());
  }
}
