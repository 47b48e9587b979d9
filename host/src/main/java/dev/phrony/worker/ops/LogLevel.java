package dev.phrony.worker.ops;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** The host's log threshold: the root logger's level. */
public enum LogLevel {
  TRACE,
  DEBUG,
  INFO,
  WARN,
  ERROR;

  /**
   * Parses a level name, in any case.
   *
   * @throws IllegalArgumentException naming the levels
   */
  public static LogLevel parse(String text) {
    String s = text == null ? "" : text.strip().toUpperCase(Locale.ROOT);
    if (s.equals("WARNING")) {
      return WARN;
    }
    for (LogLevel l : values()) {
      if (l.name().equals(s)) {
        return l;
      }
    }
    throw new IllegalArgumentException(
        "'"
            + text
            + "' is not a log level: use one of "
            + Arrays.stream(values()).map(Enum::name).collect(Collectors.joining(", ")));
  }
}
