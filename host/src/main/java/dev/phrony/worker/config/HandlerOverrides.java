package dev.phrony.worker.config;

import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.plugin.HandlerCatalog;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * An operator's settings per handler, over what its plugin declares, without a rebuild: {@code
 * max-concurrency} (the slots advertised and counted), {@code enabled} (a disabled handler is not
 * advertised) and {@code deadline} (an upper bound on any call's run time). Each rule names a
 * {@code tool@version} or a pattern of them ({@code *} matches any characters, so {@code
 * payments.*} matches every version of every {@code payments.} tool), and comes from a flag ({@code
 * --handler KEY:SETTING=VALUE}), the environment ({@code PHRONY_WORKER_HANDLERS}, rules separated
 * by {@code ;}) or {@code worker.yaml}'s {@code handlers:} mapping.
 *
 * <p>For one handler and one setting, a flag beats the environment beats the file; within one
 * source an exact key beats a pattern, a longer pattern a shorter one, and a later rule an earlier
 * one.
 */
public final class HandlerOverrides {
  public static final String ENV = Settings.ENV_PREFIX + "HANDLERS";
  public static final String FLAG = "--handler";
  public static final String FILE_KEY = "handlers";

  public static final String MAX_CONCURRENCY = "max-concurrency";
  public static final String ENABLED = "enabled";
  public static final String DEADLINE = "deadline";
  static final Set<String> SETTINGS = Set.of(MAX_CONCURRENCY, ENABLED, DEADLINE);

  /** Largest max-concurrency an operator may set. */
  static final int MAX_SLOTS = 100_000;

  private static final Pattern PATTERN = Pattern.compile("[A-Za-z0-9._+*@-]+");

  /**
   * One rule: {@code setting} is {@code value} for every handler {@code pattern} matches.
   *
   * @param order its position among rules of the same source (later wins)
   */
  public record Rule(String pattern, String setting, String value, Source source, int order) {}

  /**
   * A handler's effective settings and where each came from (a {@code DEFAULT} source: the plugin's
   * own value).
   */
  public record Effective(
      int maxConcurrency,
      Source maxConcurrencySource,
      boolean enabled,
      Source enabledSource,
      Optional<Duration> deadline,
      Source deadlineSource) {

    /** True when an operator changed anything. */
    public boolean overridden() {
      return maxConcurrencySource.kind() != Source.Kind.DEFAULT
          || enabledSource.kind() != Source.Kind.DEFAULT
          || deadlineSource.kind() != Source.Kind.DEFAULT;
    }
  }

  /**
   * What the rules make of a catalog.
   *
   * @param served the handlers to advertise, with their overrides applied
   * @param effective every loaded handler's settings, by key (disabled ones included)
   * @param warnings rules that match no handler, naming the rule and what is served
   */
  public record Applied(
      HandlerCatalog served, Map<String, Effective> effective, List<String> warnings) {}

  private HandlerOverrides() {}

  /** What is wrong with {@code value} for {@code setting}, if anything. */
  public static Optional<String> check(String setting, String value) {
    switch (setting) {
      case MAX_CONCURRENCY -> {
        try {
          int n = Integer.parseInt(value.strip());
          return n >= 1 && n <= MAX_SLOTS
              ? Optional.empty()
              : Optional.of(MAX_CONCURRENCY + " " + n + " is out of range: 1 to " + MAX_SLOTS);
        } catch (NumberFormatException e) {
          return Optional.of(MAX_CONCURRENCY + " '" + value + "' is not a whole number");
        }
      }
      case ENABLED -> {
        String v = value.strip().toLowerCase(Locale.ROOT);
        return v.equals("true") || v.equals("false")
            ? Optional.empty()
            : Optional.of(ENABLED + " '" + value + "' is not true or false");
      }
      case DEADLINE -> {
        return DurationParser.checkPositive(value.strip()).map(w -> DEADLINE + ": " + w);
      }
      default -> {
        return Optional.of(
            "unknown setting '"
                + setting
                + "'"
                + ConfigFile.suggestion(setting, SETTINGS)
                + ": the settings of a handler are "
                + String.join(", ", SETTINGS.stream().sorted().toList()));
      }
    }
  }

  /** What is wrong with {@code pattern} as a key or pattern, if anything. */
  public static Optional<String> checkPattern(String pattern) {
    return PATTERN.matcher(pattern).matches()
        ? Optional.empty()
        : Optional.of(
            "'"
                + pattern
                + "' is not a tool@version or a pattern of them (letters,"
                + " digits, '.', '_', '-', '+', '@' and '*')");
  }

  /**
   * Rules from a flag or the environment: {@code KEY:SETTING=VALUE}, several separated by {@code
   * ;}. Problems name {@code source} and what is wrong.
   */
  public static List<Rule> parse(
      String text, Source source, int firstOrder, List<String> problems) {
    List<Rule> rules = new ArrayList<>();
    int order = firstOrder;
    for (String part : text.split(";")) {
      String p = part.strip();
      if (p.isEmpty()) {
        continue;
      }
      int colon = p.lastIndexOf(':');
      int eq = p.indexOf('=', Math.max(colon, 0));
      if (colon <= 0 || eq < colon) {
        problems.add(
            source.origin()
                + ": '"
                + p
                + "' is not KEY:SETTING=VALUE (e.g."
                + " 'payments.*:max-concurrency=2')");
        continue;
      }
      String pattern = p.substring(0, colon).strip();
      String setting = p.substring(colon + 1, eq).strip();
      String value = p.substring(eq + 1).strip();
      Optional<String> wrong = checkPattern(pattern).or(() -> check(setting, value));
      if (wrong.isPresent()) {
        problems.add(source.origin() + ": " + pattern + ": " + wrong.get());
        continue;
      }
      rules.add(new Rule(pattern, setting, value, source, order++));
    }
    return rules;
  }

  /**
   * True when {@code pattern} matches {@code key} ({@code *}: any characters). The one matcher of
   * {@code tool@version} patterns: handler settings and {@code dev --require-approval} use it.
   */
  public static boolean matches(String pattern, String key) {
    if (!pattern.contains("*")) {
      return pattern.equals(key);
    }
    StringBuilder re = new StringBuilder();
    for (String literal : pattern.split("\\*", -1)) {
      if (!re.isEmpty()) {
        re.append(".*");
      }
      re.append(Pattern.quote(literal));
    }
    return key.matches(re.toString());
  }

  /** Applies {@code rules} to the handlers of {@code catalog}. */
  public static Applied apply(List<Rule> rules, HandlerCatalog catalog) {
    List<String> warnings = new ArrayList<>();
    List<String> served = catalog.entries().stream().map(HandlerCatalog.Entry::key).toList();
    List<String> patterns = new ArrayList<>();
    for (Rule r : rules) {
      if (!patterns.contains(r.pattern())) {
        patterns.add(r.pattern());
      }
    }
    for (String pattern : patterns) {
      if (served.stream().noneMatch(k -> matches(pattern, k))) {
        warnings.add(
            "handler setting '"
                + pattern
                + "' ("
                + rules.stream()
                    .filter(r -> r.pattern().equals(pattern))
                    .map(r -> r.source().toString())
                    .distinct()
                    .reduce((a, b) -> a + ", " + b)
                    .orElse("")
                + ") matches no handler; served: "
                + (served.isEmpty() ? "none" : String.join(", ", served)));
      }
    }
    Map<String, Effective> effective = new LinkedHashMap<>();
    List<HandlerCatalog.Entry> kept = new ArrayList<>();
    for (HandlerCatalog.Entry e : catalog.entries()) {
      ToolDescriptor d = e.descriptor();
      Optional<Rule> max = winner(rules, e.key(), MAX_CONCURRENCY);
      Optional<Rule> on = winner(rules, e.key(), ENABLED);
      Optional<Rule> deadline = winner(rules, e.key(), DEADLINE);
      Effective eff =
          new Effective(
              max.map(r -> Integer.parseInt(r.value())).orElse(Math.max(1, d.maxConcurrency())),
              max.map(Rule::source).orElse(Source.byDefault("plugin")),
              on.map(r -> Boolean.parseBoolean(r.value().toLowerCase(Locale.ROOT))).orElse(true),
              on.map(Rule::source).orElse(Source.byDefault("plugin")),
              deadline.map(r -> DurationParser.parse(r.value())).or(e::maxRunTime),
              deadline.map(Rule::source).orElse(Source.byDefault("none")));
      effective.put(e.key(), eff);
      if (eff.enabled()) {
        kept.add(e.withOverrides(eff.maxConcurrency(), eff.deadline()));
      }
    }
    return new Applied(HandlerCatalog.of(kept), effective, warnings);
  }

  /** The rule that decides {@code setting} for {@code key}, if any does. */
  private static Optional<Rule> winner(List<Rule> rules, String key, String setting) {
    return rules.stream()
        .filter(r -> r.setting().equals(setting) && matches(r.pattern(), key))
        .max(
            Comparator.<Rule>comparingInt(r -> -r.source().kind().ordinal())
                .thenComparingInt(r -> r.pattern().contains("*") ? 0 : 1)
                .thenComparingInt(r -> r.pattern().replace("*", "").length())
                .thenComparingInt(Rule::order));
  }
}
