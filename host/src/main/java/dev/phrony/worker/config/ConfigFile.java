package dev.phrony.worker.config;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.phrony.worker.NearMiss;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine.Model.OptionSpec;

/**
 * A {@code worker.yaml}: one flat mapping of setting keys (the long flag names without dashes) to
 * single values, a {@code handlers:} mapping of {@code tool@version} (or pattern) to that handler's
 * settings ({@link HandlerOverrides}), and a {@code dev:} mapping of settings only {@code
 * phrony-worker dev} reads ({@link Dev}). Read with Jackson's YAML parser token by token, so every
 * problem names the file, the line and the key: unknown keys, duplicate keys, lists or mappings
 * where a value belongs, values of the wrong type and values the setting's converter refuses (a bad
 * duration). Empty values ({@code key:} or {@code key: null}) leave the setting at its default.
 *
 * @param path the file
 * @param values valid values by key, as text
 * @param problems what is wrong, one line each, {@code file:line: key: what}
 * @param handlers the per-handler rules of {@code handlers:}, in file order
 * @param dev the {@code dev:} mapping's valid settings
 */
public record ConfigFile(
    Path path,
    Map<String, Value> values,
    List<String> problems,
    List<HandlerOverrides.Rule> handlers,
    Dev dev) {

  /** The key of the mapping of {@code dev}'s own settings. */
  public static final String DEV_KEY = "dev";

  /** {@code dev:}'s list of {@code tool@version} patterns whose calls are held for approval. */
  public static final String REQUIRE_APPROVAL = "require-approval";

  /** {@code dev:}'s bound on how long a held call waits for its answer. */
  public static final String APPROVAL_TIMEOUT = "approval-timeout";

  private static final List<String> DEV_SETTINGS = List.of(REQUIRE_APPROVAL, APPROVAL_TIMEOUT);

  /** A value and the line it is on. */
  public record Value(String text, int line) {}

  /**
   * The settings of {@code phrony-worker dev} under {@code dev:} ({@code run} ignores them).
   *
   * @param requireApproval {@code require-approval}: patterns as {@link HandlerOverrides} matches
   *     them (one value or a list), each with its line
   * @param approvalTimeout {@code approval-timeout}: a duration longer than zero, if set
   */
  public record Dev(List<Value> requireApproval, Optional<Value> approvalTimeout) {
    public static final Dev NONE = new Dev(List.of(), Optional.empty());

    public Dev {
      requireApproval = List.copyOf(requireApproval);
    }
  }

  private static final YAMLFactory YAML = new YAMLFactory();

  public ConfigFile {
    values = Map.copyOf(values);
    problems = List.copyOf(problems);
    handlers = List.copyOf(handlers);
    dev = dev == null ? Dev.NONE : dev;
  }

  /** No file: nothing set, nothing wrong. */
  public static ConfigFile none() {
    return new ConfigFile(null, Map.of(), List.of(), List.of(), Dev.NONE);
  }

  public Optional<Value> get(String key) {
    return Optional.ofNullable(values.get(key));
  }

  /** {@code path:line}, as sources and messages print it. */
  public String at(int line) {
    return path + ":" + line;
  }

  /**
   * Reads {@code file}, checking each key against {@code settings} (by key).
   *
   * @param required whether a missing file is a problem (an explicit {@code --config}) or just
   *     means no file (the distribution's default {@code conf/worker.yaml})
   * @param requiredBy how the file was named, for the message: {@code --config} or an env name
   */
  public static ConfigFile load(
      Path file, Map<String, OptionSpec> settings, boolean required, String requiredBy) {
    List<String> problems = new ArrayList<>();
    Map<String, Value> values = new LinkedHashMap<>();
    List<HandlerOverrides.Rule> handlers = new ArrayList<>();
    List<Value> requireApproval = new ArrayList<>();
    List<Value> approvalTimeout = new ArrayList<>();
    try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8);
        JsonParser p = YAML.createParser(reader)) {
      JsonToken first = p.nextToken();
      if (first == null) {
        return new ConfigFile(file, values, problems, handlers, Dev.NONE); // empty, or comments
      }
      if (first != JsonToken.START_OBJECT) {
        problems.add(
            file
                + ":"
                + line(p.currentTokenLocation())
                + ": expected a mapping of settings (key: value), found "
                + describe(first));
        return new ConfigFile(file, values, problems, handlers, Dev.NONE);
      }
      JsonToken t;
      while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
        String key = p.currentName();
        int line = line(p.currentTokenLocation());
        JsonToken v = p.nextToken();
        String at = file + ":" + line + ": " + key;
        if (key.equals(HandlerOverrides.FILE_KEY) && !settings.containsKey(key)) {
          readHandlers(p, v, file, at, handlers, problems);
          continue;
        }
        if (key.equals(DEV_KEY) && !settings.containsKey(key)) {
          readDev(p, v, file, at, requireApproval, approvalTimeout, problems);
          continue;
        }
        OptionSpec option = settings.get(key);
        if (option == null) {
          String hint = suggestion(key, settings.keySet());
          problems.add(
              at
                  + ": unknown key"
                  + (hint.isEmpty()
                      ? " (the keys are the long options of 'run' without the dashes, as listed by"
                          + " 'phrony-worker config')"
                      : hint));
          p.skipChildren();
          continue;
        }
        if (values.containsKey(key)) {
          problems.add(at + ": set twice (first on line " + values.get(key).line() + ")");
        }
        if (v == JsonToken.START_OBJECT || v == JsonToken.START_ARRAY) {
          problems.add(at + ": expected a single value, found " + describe(v));
          p.skipChildren();
          continue;
        }
        if (v == JsonToken.VALUE_NULL) {
          values.remove(key);
          continue;
        }
        String text =
            switch (v) {
              case VALUE_TRUE -> "true"; // also YAML 1.1's yes and on
              case VALUE_FALSE -> "false";
              case VALUE_NUMBER_INT -> p.getNumberValue().toString(); // 0x10 is 16
              default -> p.getText().strip();
            };
        Optional<String> wrong = typeProblem(option, v, text);
        if (wrong.isEmpty()) {
          wrong = Settings.check(option, text);
        }
        if (wrong.isPresent()) {
          problems.add(at + ": " + wrong.get());
        } else {
          values.put(key, new Value(text, line));
        }
      }
      if (t != JsonToken.END_OBJECT || p.nextToken() != null) {
        problems.add(
            file
                + ":"
                + line(p.currentTokenLocation())
                + ": expected one mapping of settings and nothing after it");
      }
    } catch (NoSuchFileException e) {
      if (required) {
        problems.add(
            "config file "
                + file
                + " ("
                + requiredBy
                + ") does not exist: fix the path,"
                + " or leave it unset to use the defaults");
      }
    } catch (JsonProcessingException e) {
      // Whatever was read before a syntax error is suspect: report the error alone.
      problems.clear();
      values.clear();
      handlers.clear();
      requireApproval.clear();
      approvalTimeout.clear();
      JsonLocation loc = e.getLocation();
      problems.add(
          file
              + (loc == null ? "" : ":" + line(loc))
              + ": not valid YAML: "
              + yamlMessage(e.getOriginalMessage()));
    } catch (IOException e) {
      problems.add("config file " + file + " (" + requiredBy + ") cannot be read: " + e);
    }
    return new ConfigFile(
        file,
        values,
        problems,
        handlers,
        new Dev(requireApproval, approvalTimeout.stream().reduce((a, b) -> b)));
  }

  /**
   * {@code dev:}, whose value is the current token {@code v}: {@code require-approval} (one pattern
   * or a list of them) and {@code approval-timeout} (a duration). Every bad entry is a problem
   * naming its line; the good ones are kept.
   */
  private static void readDev(
      JsonParser p,
      JsonToken v,
      Path file,
      String at,
      List<Value> requireApproval,
      List<Value> approvalTimeout,
      List<String> problems)
      throws IOException {
    if (v == JsonToken.VALUE_NULL) {
      return;
    }
    if (v != JsonToken.START_OBJECT) {
      problems.add(
          at
              + ": expected a mapping of dev's settings ("
              + String.join(", ", DEV_SETTINGS)
              + "), found "
              + describe(v));
      p.skipChildren();
      return;
    }
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String key = p.currentName();
      int line = line(p.currentTokenLocation());
      JsonToken sv = p.nextToken();
      String where = file + ":" + line + ": " + DEV_KEY + ": " + key;
      switch (key) {
        case REQUIRE_APPROVAL -> {
          if (sv == JsonToken.START_ARRAY) {
            while ((sv = p.nextToken()) != JsonToken.END_ARRAY) {
              pattern(p, sv, file, requireApproval, problems);
            }
          } else if (sv != JsonToken.VALUE_NULL) {
            pattern(p, sv, file, requireApproval, problems);
          }
        }
        case APPROVAL_TIMEOUT -> {
          if (sv == JsonToken.START_OBJECT || sv == JsonToken.START_ARRAY) {
            problems.add(where + ": expected a duration, found " + describe(sv));
            p.skipChildren();
          } else if (sv != JsonToken.VALUE_NULL) {
            String text = p.getText().strip();
            Optional<String> wrong = DurationParser.checkPositive(text);
            if (wrong.isPresent()) {
              problems.add(where + ": " + wrong.get());
            } else {
              approvalTimeout.add(new Value(text, line));
            }
          }
        }
        default -> {
          problems.add(
              where
                  + ": unknown key"
                  + suggestion(key, DEV_SETTINGS)
                  + ": the keys of "
                  + DEV_KEY
                  + ": are "
                  + String.join(", ", DEV_SETTINGS));
          p.skipChildren();
        }
      }
    }
  }

  /** One {@code require-approval} entry, the current token {@code v}. */
  private static void pattern(
      JsonParser p, JsonToken v, Path file, List<Value> patterns, List<String> problems)
      throws IOException {
    int line = line(p.currentTokenLocation());
    String where = file + ":" + line + ": " + DEV_KEY + ": " + REQUIRE_APPROVAL;
    if (v == JsonToken.START_OBJECT || v == JsonToken.START_ARRAY) {
      problems.add(
          where
              + ": expected a tool@version or a pattern such as 'payments.*', found "
              + describe(v));
      p.skipChildren();
      return;
    }
    String text = p.getText().strip();
    Optional<String> wrong = HandlerOverrides.checkPattern(text);
    if (wrong.isPresent()) {
      problems.add(where + ": " + wrong.get());
    } else {
      patterns.add(new Value(text, line));
    }
  }

  /**
   * {@code handlers:}, whose value is the current token {@code v}: pattern to a mapping of
   * settings. Every bad entry is a problem naming its line; the good ones are kept.
   */
  private static void readHandlers(
      JsonParser p,
      JsonToken v,
      Path file,
      String at,
      List<HandlerOverrides.Rule> rules,
      List<String> problems)
      throws IOException {
    if (v == JsonToken.VALUE_NULL) {
      return;
    }
    if (v != JsonToken.START_OBJECT) {
      problems.add(
          at
              + ": expected a mapping of tool@version (or a pattern such as"
              + " 'payments.*') to its settings, found "
              + describe(v));
      p.skipChildren();
      return;
    }
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String pattern = p.currentName();
      int line = line(p.currentTokenLocation());
      JsonToken pv = p.nextToken();
      String here = file + ":" + line + ": handlers: " + pattern;
      Optional<String> badPattern = HandlerOverrides.checkPattern(pattern);
      if (badPattern.isPresent()) {
        problems.add(here + ": " + badPattern.get());
        p.skipChildren();
        continue;
      }
      if (pv != JsonToken.START_OBJECT) {
        problems.add(
            here
                + ": expected a mapping of settings (max-concurrency, enabled,"
                + " deadline), found "
                + describe(pv));
        p.skipChildren();
        continue;
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String setting = p.currentName();
        int settingLine = line(p.currentTokenLocation());
        JsonToken sv = p.nextToken();
        String where = file + ":" + settingLine + ": handlers: " + pattern + ": " + setting;
        if (sv == JsonToken.START_OBJECT || sv == JsonToken.START_ARRAY) {
          problems.add(where + ": expected a single value, found " + describe(sv));
          p.skipChildren();
          continue;
        }
        if (sv == JsonToken.VALUE_NULL) {
          continue;
        }
        String text =
            switch (sv) {
              case VALUE_TRUE -> "true";
              case VALUE_FALSE -> "false";
              case VALUE_NUMBER_INT -> p.getNumberValue().toString();
              default -> p.getText().strip();
            };
        Optional<String> wrong = HandlerOverrides.check(setting, text);
        if (wrong.isPresent()) {
          problems.add(where + ": " + wrong.get());
        } else {
          rules.add(
              new HandlerOverrides.Rule(
                  pattern, setting, text, Source.file(file + ":" + settingLine), rules.size()));
        }
      }
    }
  }

  /** SnakeYAML's message without its source excerpts: what it expected and found. */
  private static String yamlMessage(String message) {
    return String.join(
        "; ",
        message
            .lines()
            .filter(l -> !l.isBlank() && !l.startsWith(" ") && !l.startsWith("\t"))
            .map(String::strip)
            .toList());
  }

  private static Optional<String> typeProblem(OptionSpec option, JsonToken v, String text) {
    if (Settings.isBoolean(option) && v != JsonToken.VALUE_TRUE && v != JsonToken.VALUE_FALSE) {
      return Optional.of("expected true or false, found " + quoted(v, text));
    }
    if (Settings.isInteger(option) && v != JsonToken.VALUE_NUMBER_INT) {
      return Optional.of("expected a whole number, found " + quoted(v, text));
    }
    return Optional.empty();
  }

  private static String quoted(JsonToken v, String text) {
    return v == JsonToken.VALUE_STRING ? "the text '" + text + "'" : "'" + text + "'";
  }

  private static String describe(JsonToken t) {
    return switch (t) {
      case START_OBJECT -> "a mapping";
      case START_ARRAY -> "a list";
      default -> "a single value";
    };
  }

  private static int line(JsonLocation loc) {
    return loc == null ? 0 : loc.getLineNr();
  }

  /** {@code (did you mean 'drain-timeout'?)} for a near miss, else nothing. */
  static String suggestion(String key, Iterable<String> known) {
    return NearMiss.closest(key, known).map(best -> " (did you mean '" + best + "'?)").orElse("");
  }
}
