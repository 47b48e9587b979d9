package dev.phrony.worker.dev;

import dev.phrony.worker.config.ConfigException;
import dev.phrony.worker.config.ConfigFile;
import dev.phrony.worker.config.DurationParser;
import dev.phrony.worker.config.HandlerOverrides;
import dev.phrony.worker.config.Source;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Which calls the embedded runtime holds for a human's approval before it dispatches them, as a
 * human-in-the-loop policy of the real runtime would: those whose {@code tool@version} matches one
 * of the patterns ({@code *}: any characters, matched exactly as the per-handler settings match
 * them, see {@link HandlerOverrides#matches}), and for how long a held call waits for its answer
 * before it expires.
 *
 * @param rules the patterns, each with where it was set
 * @param timeout how long a held call waits for an answer; empty: until dev stops
 */
public record ApprovalPolicy(List<Rule> rules, Optional<Duration> timeout) {

  /** Holds nothing. */
  public static final ApprovalPolicy NONE = new ApprovalPolicy(List.of(), Optional.empty());

  /** The flag that adds a pattern. */
  public static final String FLAG = "--require-approval";

  /** The flag that bounds the wait. */
  public static final String TIMEOUT_FLAG = "--approval-timeout";

  /** One pattern, and where it came from (a flag, or a line of {@code worker.yaml}). */
  public record Rule(String pattern, Source source) {
    public Rule {
      Objects.requireNonNull(pattern, "pattern");
      Objects.requireNonNull(source, "source");
    }
  }

  public ApprovalPolicy {
    rules = List.copyOf(rules);
    Objects.requireNonNull(timeout, "timeout");
    if (timeout.isPresent() && (timeout.get().isZero() || timeout.get().isNegative())) {
      throw new IllegalArgumentException("the approval timeout must be longer than zero");
    }
  }

  /**
   * The policy of {@code dev}: the {@value #FLAG} flags if any were given, else the file's {@code
   * dev: require-approval} list; {@value #TIMEOUT_FLAG} over the file's {@code approval-timeout}.
   * Flags beat the file, as for every setting. The file's values were checked when it was read.
   *
   * @param flagTimeout the flag's value, or null when not given
   * @throws ConfigException naming each bad flag
   */
  public static ApprovalPolicy resolve(
      List<String> flagPatterns, Duration flagTimeout, ConfigFile file) {
    List<String> problems = new ArrayList<>();
    List<Rule> rules = new ArrayList<>();
    if (!flagPatterns.isEmpty()) {
      for (String p : flagPatterns) {
        String pattern = p.strip();
        HandlerOverrides.checkPattern(pattern)
            .ifPresentOrElse(
                wrong -> problems.add(FLAG + " " + wrong),
                () -> rules.add(new Rule(pattern, Source.flag(FLAG))));
      }
    } else {
      file.dev()
          .requireApproval()
          .forEach(v -> rules.add(new Rule(v.text(), Source.file(file.at(v.line())))));
    }
    Optional<Duration> timeout = Optional.empty();
    if (flagTimeout != null) {
      if (flagTimeout.isZero()) {
        problems.add(
            TIMEOUT_FLAG + " must be longer than zero, e.g. 5m (leave it out for no" + " expiry)");
      } else {
        timeout = Optional.of(flagTimeout);
      }
    } else if (file.dev().approvalTimeout().isPresent()) {
      timeout = Optional.of(DurationParser.parse(file.dev().approvalTimeout().get().text()));
    }
    if (!problems.isEmpty()) {
      throw new ConfigException(problems);
    }
    return new ApprovalPolicy(rules, timeout);
  }

  /** The rule that holds calls of {@code key} (the first that matches), if any. */
  public Optional<Rule> match(String key) {
    return rules.stream().filter(r -> HandlerOverrides.matches(r.pattern(), key)).findFirst();
  }

  /** True when no call is ever held. */
  public boolean isEmpty() {
    return rules.isEmpty();
  }

  /** The patterns that match none of {@code keys}, in order (most likely a typo). */
  public List<String> unmatched(List<String> keys) {
    return rules.stream()
        .map(Rule::pattern)
        .filter(p -> keys.stream().noneMatch(k -> HandlerOverrides.matches(p, k)))
        .toList();
  }
}
