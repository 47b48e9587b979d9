package dev.phrony.worker.config;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;

/**
 * Converts flag values like {@code 7d}, {@code 12h}, {@code 30m}, {@code 45s}, {@code 500ms},
 * {@code 1h30m} or ISO-8601 {@code PT30S} to a non-negative {@link Duration}. Use it as
 * {@code @Option(converter = DurationParser.class)}; picocli names the flag in the error.
 */
public final class DurationParser implements CommandLine.ITypeConverter<Duration> {
  private static final Pattern PART = Pattern.compile("(\\d+)(ms|d|h|m|s)");
  private static final String EXAMPLES =
      "use a number and a unit (d, h, m, s, ms), e.g. 7d, 12h, 30m, 45s, 500ms or 1h30m, "
          + "or ISO-8601 like PT30S";

  @Override
  public Duration convert(String value) {
    try {
      return parse(value);
    } catch (IllegalArgumentException e) {
      throw new CommandLine.TypeConversionException(e.getMessage());
    }
  }

  /** What is wrong with {@code text} as a duration longer than zero, if anything. */
  public static Optional<String> checkPositive(String text) {
    try {
      Duration d = parse(text);
      return d.isZero() || d.isNegative()
          ? Optional.of("'" + text + "' must be longer than zero")
          : Optional.empty();
    } catch (IllegalArgumentException e) {
      return Optional.of(e.getMessage());
    }
  }

  /**
   * Parses a duration.
   *
   * @throws IllegalArgumentException saying what is wrong and giving examples
   */
  public static Duration parse(String text) {
    String s = text == null ? "" : text.strip().toLowerCase(Locale.ROOT);
    if (s.isEmpty()) {
      throw new IllegalArgumentException("a duration is required: " + EXAMPLES);
    }
    Duration d;
    if (s.startsWith("p") || s.startsWith("-p")) {
      try {
        d = Duration.parse(s.toUpperCase(Locale.ROOT));
      } catch (DateTimeParseException e) {
        throw new IllegalArgumentException(
            "'" + text + "' is not an ISO-8601 duration: " + EXAMPLES);
      }
    } else {
      d = Duration.ZERO;
      Matcher m = PART.matcher(s);
      int at = 0;
      while (at < s.length()) {
        if (!m.find(at) || m.start() != at) {
          throw new IllegalArgumentException(
              "'"
                  + text
                  + "' is not a duration"
                  + (s.matches("\\d+") ? " (it has no unit)" : "")
                  + ": "
                  + EXAMPLES);
        }
        try {
          long n = Long.parseLong(m.group(1));
          d =
              d.plus(
                  switch (m.group(2)) {
                    case "d" -> Duration.ofDays(n);
                    case "h" -> Duration.ofHours(n);
                    case "m" -> Duration.ofMinutes(n);
                    case "s" -> Duration.ofSeconds(n);
                    default -> Duration.ofMillis(n);
                  });
        } catch (ArithmeticException | NumberFormatException e) {
          throw new IllegalArgumentException("'" + text + "' is too long a duration");
        }
        at = m.end();
      }
    }
    if (d.isNegative()) {
      throw new IllegalArgumentException("'" + text + "' is negative: " + EXAMPLES);
    }
    return d;
  }

  /** A duration the way {@link #parse} reads it back: {@code 30s}, {@code 1h30m}, {@code 500ms}. */
  public static String format(Duration d) {
    if (d.isZero()) {
      return "0s";
    }
    StringBuilder out = new StringBuilder();
    long days = d.toDays();
    int hours = d.toHoursPart();
    int minutes = d.toMinutesPart();
    int seconds = d.toSecondsPart();
    int millis = d.toMillisPart();
    if (days > 0) {
      out.append(days).append('d');
    }
    if (hours > 0) {
      out.append(hours).append('h');
    }
    if (minutes > 0) {
      out.append(minutes).append('m');
    }
    if (seconds > 0) {
      out.append(seconds).append('s');
    }
    if (millis > 0) {
      out.append(millis).append("ms");
    }
    return out.isEmpty() ? d.toString() : out.toString();
  }
}
