package dev.phrony.worker.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.plugin.HandlerCatalog;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HandlerOverridesTest {
  @TempDir Path tmp;

  private static ToolHandler handler(String tool, String version, int max) {
    ToolDescriptor d =
        ToolDescriptor.builder(tool)
            .version(version)
            .maxConcurrency(max)
            .sideEffectClass(SideEffectClass.READ_ONLY)
            .build();
    return new ToolHandler() {
      @Override
      public ToolDescriptor descriptor() {
        return d;
      }

      @Override
      public ToolResult handle(dev.phrony.worker.api.ToolCall call) {
        return ToolResult.json("{}");
      }
    };
  }

  private static final HandlerCatalog CATALOG =
      HandlerCatalog.of(
          List.of(
              HandlerCatalog.Entry.of(handler("weather.get-forecast", "1.0.0", 32), "weather"),
              HandlerCatalog.Entry.of(handler("payments.process-payment", "1.0.0", 16), "payments"),
              HandlerCatalog.Entry.of(handler("payments.refund", "2.0.0", 16), "payments"),
              HandlerCatalog.Entry.of(handler("echo", "default", 64), "echo")));

  private static List<HandlerOverrides.Rule> parse(String text, Source source) {
    List<String> problems = new ArrayList<>();
    List<HandlerOverrides.Rule> rules = HandlerOverrides.parse(text, source, 0, problems);
    assertThat(problems).isEmpty();
    return rules;
  }

  @Test
  void exact_keys_and_patterns_set_concurrency_disable_and_bound_handlers() {
    List<HandlerOverrides.Rule> rules =
        parse(
            "weather.get-forecast@1.0.0:max-concurrency=8;"
                + "payments.*:max-concurrency=2;payments.*:deadline=30s;echo@default:enabled=false",
            Source.file("worker.yaml:3"));

    HandlerOverrides.Applied a = HandlerOverrides.apply(rules, CATALOG);

    assertThat(a.served().entries())
        .extracting(HandlerCatalog.Entry::key)
        .containsExactly(
            "payments.process-payment@1.0.0",
            "payments.refund@2.0.0",
            "weather.get-forecast@1.0.0");
    assertThat(
            a.served()
                .find("weather.get-forecast", "1.0.0")
                .orElseThrow()
                .descriptor()
                .maxConcurrency())
        .isEqualTo(8);
    HandlerCatalog.Entry pay = a.served().find("payments.refund", "2.0.0").orElseThrow();
    assertThat(pay.descriptor().maxConcurrency()).isEqualTo(2);
    assertThat(pay.maxRunTime()).contains(Duration.ofSeconds(30));
    assertThat(pay.descriptorHash())
        .as("the plugin's own descriptor, for audits")
        .isEqualTo(CATALOG.find("payments.refund", "2.0.0").orElseThrow().descriptorHash());
    HandlerOverrides.Effective echo = a.effective().get("echo@default");
    assertThat(echo.enabled()).isFalse();
    assertThat(echo.enabledSource()).isEqualTo(Source.file("worker.yaml:3"));
    assertThat(echo.maxConcurrency()).isEqualTo(64);
    assertThat(echo.maxConcurrencySource().kind()).isEqualTo(Source.Kind.DEFAULT);
    assertThat(a.warnings()).isEmpty();
  }

  @Test
  void a_flag_beats_the_env_beats_the_file_and_an_exact_key_beats_a_pattern() {
    List<HandlerOverrides.Rule> rules = new ArrayList<>();
    rules.addAll(
        parse(
            "payments.process-payment@1.0.0:max-concurrency=5;" + "payments.*:max-concurrency=7",
            Source.file("worker.yaml:9")));
    rules.addAll(parse("payments.*:max-concurrency=3", Source.env(HandlerOverrides.ENV)));
    rules.addAll(
        parse("payments.refund@2.0.0:max-concurrency=1", Source.flag(HandlerOverrides.FLAG)));

    Map<String, HandlerOverrides.Effective> e = HandlerOverrides.apply(rules, CATALOG).effective();

    assertThat(e.get("payments.refund@2.0.0").maxConcurrency()).isEqualTo(1);
    assertThat(e.get("payments.process-payment@1.0.0").maxConcurrency())
        .as("env over file")
        .isEqualTo(3);
    assertThat(e.get("payments.process-payment@1.0.0").maxConcurrencySource())
        .isEqualTo(Source.env(HandlerOverrides.ENV));
    List<HandlerOverrides.Rule> fileOnly =
        parse(
            "payments.*:max-concurrency=7;" + "payments.process-payment@1.0.0:max-concurrency=5",
            Source.file("worker.yaml:9"));
    assertThat(
            HandlerOverrides.apply(fileOnly, CATALOG)
                .effective()
                .get("payments.process-payment@1.0.0")
                .maxConcurrency())
        .as("exact over pattern")
        .isEqualTo(5);
  }

  @Test
  void a_rule_that_matches_nothing_is_a_warning_naming_it_and_what_is_served() {
    HandlerOverrides.Applied a =
        HandlerOverrides.apply(
            parse("wether.*:max-concurrency=2", Source.flag(HandlerOverrides.FLAG)), CATALOG);
    assertThat(a.warnings())
        .singleElement()
        .asString()
        .startsWith("handler setting 'wether.*' (flag --handler) matches no handler; served: ")
        .contains("weather.get-forecast@1.0.0");
  }

  @Test
  void bad_rules_are_problems_naming_where_they_came_from() {
    List<String> problems = new ArrayList<>();
    HandlerOverrides.parse(
        "echo@default:max-concurrency=0;weather:colour=red;nonsense;"
            + "payments.*:deadline=soon;echo@default:max_concurrency=2",
        Source.env(HandlerOverrides.ENV),
        0,
        problems);
    assertThat(problems)
        .containsExactly(
            "PHRONY_WORKER_HANDLERS: echo@default: max-concurrency 0 is out of range: 1 to 100000",
            "PHRONY_WORKER_HANDLERS: weather: unknown setting 'colour': the settings of a handler"
                + " are deadline, enabled, max-concurrency",
            "PHRONY_WORKER_HANDLERS: 'nonsense' is not KEY:SETTING=VALUE (e.g."
                + " 'payments.*:max-concurrency=2')",
            "PHRONY_WORKER_HANDLERS: payments.*: deadline: 'soon' is not a duration: use a number"
                + " and a unit (d, h, m, s, ms), e.g. 7d, 12h, 30m, 45s, 500ms or 1h30m, or"
                + " ISO-8601 like PT30S",
            "PHRONY_WORKER_HANDLERS: echo@default: unknown setting 'max_concurrency' (did you mean"
                + " 'max-concurrency'?): the settings of a handler are deadline, enabled,"
                + " max-concurrency");
  }

  @Test
  void worker_yaml_holds_the_rules_under_handlers_and_names_bad_lines() throws Exception {
    Path file =
        Files.writeString(
            tmp.resolve("worker.yaml"),
            """
        handlers:
          weather.get-forecast@1.0.0:
            max-concurrency: 8
          "payments.*":
            enabled: false
            deadline: 20s
          echo@default:
            max-concurrency: lots
          bad key!:
            enabled: true
        """);
    ConfigFile f = ConfigFile.load(file, Map.of(), true, "--config");
    assertThat(f.handlers())
        .extracting(
            r -> r.pattern() + " " + r.setting() + "=" + r.value() + " @" + r.source().origin())
        .containsExactly(
            "weather.get-forecast@1.0.0 max-concurrency=8 @" + file + ":3",
            "payments.* enabled=false @" + file + ":5",
            "payments.* deadline=20s @" + file + ":6");
    assertThat(f.problems())
        .containsExactly(
            file
                + ":8: handlers: echo@default: max-concurrency: max-concurrency 'lots' is not a"
                + " whole number",
            file
                + ":9: handlers: bad key!: 'bad key!' is not a tool@version or a pattern of them"
                + " (letters, digits, '.', '_', '-', '+', '@' and '*')");
  }
}
