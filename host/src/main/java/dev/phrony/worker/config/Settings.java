package dev.phrony.worker.config;

import java.lang.reflect.AnnotatedElement;
import java.lang.reflect.Member;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * What makes a picocli option a worker setting, and the names it has outside the command line, all
 * derived from the option itself: its key in {@code worker.yaml} is its long name without the
 * dashes ({@code --drain-timeout} is {@code drain-timeout}); its environment variable is {@code
 * PHRONY_WORKER_} and the key in upper snake case ({@code PHRONY_WORKER_DRAIN_TIMEOUT}) unless the
 * option carries an {@link Env} name.
 */
public final class Settings {
  public static final String ENV_PREFIX = "PHRONY_WORKER_";

  private Settings() {}

  /** True for options declared in a {@link Configurable} class. */
  public static boolean isSetting(OptionSpec option) {
    return option.userObject() instanceof Member m
        && m.getDeclaringClass().isAnnotationPresent(Configurable.class);
  }

  /** The settings of a command, in declaration order. */
  public static List<OptionSpec> of(CommandSpec command) {
    List<OptionSpec> out = new ArrayList<>();
    for (OptionSpec o : command.options()) {
      if (isSetting(o)) {
        out.add(o);
      }
    }
    return out;
  }

  /** {@code drain-timeout} for {@code --drain-timeout}. */
  public static String key(OptionSpec option) {
    return option.longestName().replaceFirst("^-+", "");
  }

  /** The option's environment variable. */
  public static String envName(OptionSpec option) {
    if (option.userObject() instanceof AnnotatedElement e && e.isAnnotationPresent(Env.class)) {
      return e.getAnnotation(Env.class).value();
    }
    return envName(key(option));
  }

  /** {@code PHRONY_WORKER_DRAIN_TIMEOUT} for {@code drain-timeout}. */
  public static String envName(String key) {
    return ENV_PREFIX + key.toUpperCase(Locale.ROOT).replace('-', '_');
  }

  /** True for on/off settings. */
  public static boolean isBoolean(OptionSpec option) {
    return option.type() == boolean.class || option.type() == Boolean.class;
  }

  /** True for whole-number settings. */
  public static boolean isInteger(OptionSpec option) {
    Class<?> t = option.type();
    return t == int.class || t == Integer.class || t == long.class || t == Long.class;
  }

  /**
   * Checks that {@code text} is a valid value for {@code option}, as the command line would convert
   * it (with the option's own converter where it has one), so a value from the environment or the
   * file is refused at start with its origin, not when it is first used.
   *
   * @return what is wrong, or empty
   */
  public static Optional<String> check(OptionSpec option, String text) {
    Class<?> t = option.type();
    if (isBoolean(option)) {
      return text.equalsIgnoreCase("true") || text.equalsIgnoreCase("false")
          ? Optional.empty()
          : Optional.of("'" + text + "' is not a boolean: use true or false");
    }
    try {
      if (option.converters() != null && option.converters().length > 0) {
        for (CommandLine.ITypeConverter<?> c : option.converters()) {
          c.convert(text);
        }
        return Optional.empty();
      }
      if (t == int.class || t == Integer.class) {
        Integer.parseInt(text);
      } else if (t == long.class || t == Long.class) {
        Long.parseLong(text);
      } else if (t.isEnum()) {
        boolean known =
            Arrays.stream(t.getEnumConstants()).anyMatch(c -> c.toString().equals(text));
        if (!known) {
          return Optional.of(
              "'"
                  + text
                  + "' is not one of "
                  + Arrays.stream(t.getEnumConstants())
                      .map(Object::toString)
                      .collect(Collectors.joining(", ")));
        }
      } else if (t == Path.class) {
        Path.of(text);
      }
      return Optional.empty();
    } catch (NumberFormatException e) {
      return Optional.of("'" + text + "' is not a whole number");
    } catch (InvalidPathException e) {
      return Optional.of("'" + text + "' is not a valid path: " + e.getReason());
    } catch (Exception e) {
      return Optional.of(e.getMessage() == null ? "'" + text + "' is not valid" : e.getMessage());
    }
  }
}
