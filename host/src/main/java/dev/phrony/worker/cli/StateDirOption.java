package dev.phrony.worker.cli;

import dev.phrony.worker.Distribution;
import dev.phrony.worker.config.Configurable;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import picocli.CommandLine.Option;

/**
 * {@code --state-dir DIR}, as a picocli mixin ({@code @Mixin StateDirOption stateDir}), and the
 * one place that decides the default: the flag, else {@code $PHRONY_WORKER_STATE_DIR}, else
 * {@code <phrony.home>/state} (the launcher sets the system property {@code phrony.home}), else
 * {@code ./state}.
 */
@Configurable
public final class StateDirOption {
  public static final String ENV = "PHRONY_WORKER_STATE_DIR";

  @Option(names = "--state-dir", paramLabel = "DIR",
      description = "Worker state directory (default: $" + ENV + ", else <install dir>/state).")
  Path stateDir;

  /** The state dir this command uses. */
  public Path resolve() {
    return resolve(stateDir, System.getenv(), System.getProperties());
  }

  /** The flag as given, or null. */
  public Path flag() {
    return stateDir;
  }

  /** The resolution rule, on explicit inputs. */
  public static Path resolve(Path flag, Map<String, String> env, Properties properties) {
    if (flag != null) {
      return flag.toAbsolutePath().normalize();
    }
    String fromEnv = env.get(ENV);
    if (fromEnv != null && !fromEnv.isBlank()) {
      return Path.of(fromEnv.strip()).toAbsolutePath().normalize();
    }
    String home = properties.getProperty(Distribution.HOME_PROPERTY);
    Path base = home == null || home.isBlank() ? Path.of(".") : Path.of(home.strip());
    return base.resolve("state").toAbsolutePath().normalize();
  }
}
