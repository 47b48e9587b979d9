package dev.phrony.worker.cli;

import dev.phrony.worker.Distribution;
import dev.phrony.worker.UserErrorException;
import dev.phrony.worker.config.Configurable;
import dev.phrony.worker.state.StateDirMove;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.stream.Stream;
import picocli.CommandLine.Option;

/**
 * {@code --state-dir DIR}, as a picocli mixin ({@code @Mixin StateDirOption stateDir}), and the one
 * place that decides where the state lives: the flag, else {@code $PHRONY_WORKER_STATE_DIR}, else
 * {@code state/} beside {@code bin/} of an unpacked distribution, else (the distribution a checkout
 * builds, inside {@code target/}) the user's state folder, {@code $XDG_STATE_HOME/phrony-worker} or
 * {@code ~/.local/state/phrony-worker}.
 *
 * <p>Held results and the intents that stop a second charge must outlive a rebuild: a state dir
 * inside a build output ({@code target/}), where {@code ./mvnw clean} deletes it, is refused unless
 * {@code --state-dir-in-build-output} says it is meant. A state dir found at the old default of a
 * checkout ({@code dist/target/dist/phrony-worker/state}) is moved to the new one.
 */
@Configurable
public final class StateDirOption {

  public static final String ENV = "PHRONY_WORKER_STATE_DIR";

  /** The folder a Maven build writes its output to. */
  static final String BUILD_OUTPUT = "target";

  @Option(
      names = "--state-dir",
      paramLabel = "DIR",
      description =
          "Worker state directory: durable results, intents and the worker id; "
              + "owner-only, one worker at a time (default: $"
              + ENV
              + ", else state/ beside bin/ of "
              + "an unpacked distribution, else $XDG_STATE_HOME/phrony-worker or "
              + "~/.local/state/phrony-worker).")
  Path stateDir;

  @Option(
      names = "--state-dir-in-build-output",
      description =
          "Allow a state directory inside a build output (a target/ folder), which a "
              + "clean build deletes with the results it holds.")
  boolean inBuildOutput;

  /** The state dir this command uses (nothing is moved or checked: for display). */
  public Path resolve() {
    return resolve(stateDir, System.getenv(), System.getProperties());
  }

  /**
   * The state dir a command is about to open: a state dir left at the old default of a checkout is
   * moved here first, and one inside a build output is refused.
   *
   * @throws UserErrorException naming the dir and the fix
   */
  public Path resolveForUse() {
    return resolveForUse(stateDir, inBuildOutput, System.getenv(), System.getProperties());
  }

  /** The state dir a command reads (or purges): moved from the old default first, if there. */
  public Path resolveMigrating() {
    Path dir = resolve();
    migrateOldDefault(stateDir, System.getenv(), System.getProperties(), dir);
    return dir;
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
    Optional<Path> home = home(properties);
    if (home.isPresent() && !inBuildOutput(home.get())) {
      return home.get().resolve("state");
    }
    return userStateDir(env, properties);
  }

  /** {@link #resolveForUse()} on explicit inputs. */
  static Path resolveForUse(
      Path flag, boolean allowBuildOutput, Map<String, String> env, Properties properties) {
    Path dir = resolve(flag, env, properties);
    migrateOldDefault(flag, env, properties, dir);
    if (inBuildOutput(dir) && !allowBuildOutput) {
      throw new UserErrorException(
          "state dir "
              + dir
              + " is inside a build output ("
              + BUILD_OUTPUT
              + "/): a clean build deletes it, with the results it holds until the "
              + "runtime acknowledges them; choose another --state-dir (or $"
              + ENV
              + "), or pass "
              + "--state-dir-in-build-output if that is meant");
    }
    return dir;
  }

  /** When {@code dir} is the default and the old default of a checkout holds state, moves it. */
  private static void migrateOldDefault(
      Path flag, Map<String, String> env, Properties properties, Path dir) {
    boolean byDefault = flag == null && (env.get(ENV) == null || env.get(ENV).isBlank());
    Optional<Path> old =
        home(properties).filter(StateDirOption::inBuildOutput).map(h -> h.resolve("state"));
    if (byDefault && old.isPresent() && !old.get().equals(dir) && holdsState(old.get())) {
      StateDirMove.move(old.get(), dir);
    }
  }

  /** {@code $XDG_STATE_HOME/phrony-worker}, else {@code ~/.local/state/phrony-worker}. */
  static Path userStateDir(Map<String, String> env, Properties properties) {
    String xdg = env.get("XDG_STATE_HOME");
    if (xdg != null && !xdg.isBlank() && Path.of(xdg.strip()).isAbsolute()) {
      return Path.of(xdg.strip(), "phrony-worker").normalize();
    }
    String home = env.getOrDefault("HOME", properties.getProperty("user.home", "."));
    return Path.of(home, ".local", "state", "phrony-worker").toAbsolutePath().normalize();
  }

  /** True when {@code dir} is inside a folder named {@code target} (a build output). */
  static boolean inBuildOutput(Path dir) {
    for (Path part : dir.toAbsolutePath().normalize()) {
      if (part.toString().equals(BUILD_OUTPUT)) {
        return true;
      }
    }
    return false;
  }

  private static Optional<Path> home(Properties properties) {
    String home = properties.getProperty(Distribution.HOME_PROPERTY);
    return home == null || home.isBlank()
        ? Optional.empty()
        : Optional.of(Path.of(home.strip()).toAbsolutePath().normalize());
  }

  /** True when {@code dir} is a folder with anything in it. */
  private static boolean holdsState(Path dir) {
    if (!Files.isDirectory(dir)) {
      return false;
    }
    try (Stream<Path> s = Files.list(dir)) {
      return s.findAny().isPresent();
    } catch (IOException e) {
      return false;
    }
  }
}
