package dev.phrony.worker.config;

import dev.phrony.worker.UserErrorException;
import java.util.List;

/**
 * The configuration cannot be used: an unknown key, a value of the wrong type, a bad duration, a
 * missing explicit config file, settings that contradict each other. Each problem names where the
 * value came from (file and line, environment variable or flag) and the setting.
 */
public final class ConfigException extends UserErrorException {
  private static final long serialVersionUID = 1L;

  private final List<String> problems;

  public ConfigException(List<String> problems) {
    super(message(problems));
    this.problems = List.copyOf(problems);
  }

  public ConfigException(String problem) {
    this(List.of(problem));
  }

  /** Every problem found, one line each. */
  public List<String> problems() {
    return problems;
  }

  private static String message(List<String> problems) {
    if (problems.isEmpty()) {
      throw new IllegalArgumentException("no problem to report");
    }
    return problems.size() == 1
        ? problems.get(0)
        : problems.get(0)
            + " (and "
            + (problems.size() - 1)
            + " more: "
            + String.join("; ", problems.subList(1, problems.size()))
            + ")";
  }
}
