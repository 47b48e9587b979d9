package dev.phrony.worker.dev;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.worker.config.ConfigException;
import dev.phrony.worker.config.ConfigFile;
import dev.phrony.worker.config.Source;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which calls {@code dev} holds for approval, and where the patterns come from. */
class ApprovalPolicyTest {
  @TempDir Path tmp;

  private static ApprovalPolicy flags(String... patterns) {
    return ApprovalPolicy.resolve(List.of(patterns), null, ConfigFile.none());
  }

  @Test
  void patterns_match_keys_as_the_handler_settings_do() {
    ApprovalPolicy p = flags("payments.*", "echo@default", "*@2.0.0");

    assertThat(p.match("payments.process-payment@1.0.0"))
        .map(ApprovalPolicy.Rule::pattern)
        .contains("payments.*");
    assertThat(p.match("echo@default")).map(ApprovalPolicy.Rule::pattern).contains("echo@default");
    assertThat(p.match("weather.get-forecast@2.0.0"))
        .map(ApprovalPolicy.Rule::pattern)
        .contains("*@2.0.0");
    assertThat(p.match("weather.get-forecast@1.0.0")).isEmpty();
    // An exact key is exact: 'echo' is not the key of the unversioned handler.
    assertThat(flags("echo").match("echo@default")).isEmpty();
    // '.' is no wildcard.
    assertThat(flags("payments.*").match("paymentsXrefund@1.0.0")).isEmpty();
    assertThat(flags("*").match("anything@1")).isPresent();
    assertThat(ApprovalPolicy.NONE.match("payments.process-payment@1.0.0")).isEmpty();
    assertThat(p.match("payments.refund@2.0.0").orElseThrow().source())
        .isEqualTo(Source.flag("--require-approval"));
  }

  @Test
  void patterns_that_match_no_served_handler_are_named() {
    assertThat(
            flags("payments.*", "paymnts.*", "echo")
                .unmatched(List.of("payments.process-payment@1.0.0", "echo@default")))
        .containsExactly("paymnts.*", "echo");
  }

  @Test
  void the_file_gives_patterns_and_timeout_unless_flags_do() throws Exception {
    Path yaml =
        Files.writeString(
            tmp.resolve("worker.yaml"),
            """
        drain-timeout: 10s
        dev:
          require-approval:
            - payments.*
            - echo@default
          approval-timeout: 5m
        """);
    ConfigFile file = ConfigFile.load(yaml, Map.of(), true, "--config");
    // drain-timeout is run's: unknown to an empty set of settings, the rest is fine.
    assertThat(file.problems()).singleElement().asString().contains("drain-timeout");

    ApprovalPolicy fromFile = ApprovalPolicy.resolve(List.of(), null, file);
    assertThat(fromFile.rules())
        .extracting(ApprovalPolicy.Rule::pattern)
        .containsExactly("payments.*", "echo@default");
    assertThat(fromFile.rules().get(0).source()).isEqualTo(Source.file(yaml + ":4"));
    assertThat(fromFile.timeout()).contains(Duration.ofMinutes(5));

    ApprovalPolicy fromFlags =
        ApprovalPolicy.resolve(List.of("weather.*"), Duration.ofSeconds(30), file);
    assertThat(fromFlags.rules())
        .extracting(ApprovalPolicy.Rule::pattern)
        .containsExactly("weather.*");
    assertThat(fromFlags.timeout()).contains(Duration.ofSeconds(30));

    ApprovalPolicy flagsNoTimeout = ApprovalPolicy.resolve(List.of("weather.*"), null, file);
    assertThat(flagsNoTimeout.timeout()).contains(Duration.ofMinutes(5));
  }

  @Test
  void a_single_pattern_in_the_file_is_a_list_of_one() throws Exception {
    Path yaml =
        Files.writeString(
            tmp.resolve("worker.yaml"),
            """
        dev:
          require-approval: payments.*
        """);
    ConfigFile file = ConfigFile.load(yaml, Map.of(), true, "--config");
    assertThat(file.problems()).isEmpty();
    ApprovalPolicy p = ApprovalPolicy.resolve(List.of(), null, file);
    assertThat(p.rules()).extracting(ApprovalPolicy.Rule::pattern).containsExactly("payments.*");
    assertThat(p.timeout()).isEmpty();
  }

  @Test
  void bad_entries_in_the_file_are_problems_with_their_line() throws Exception {
    Path yaml =
        Files.writeString(
            tmp.resolve("worker.yaml"),
            """
        dev:
          require-approval:
            - "pay ments"
            - ok.*
          approval-timeout: 0s
          require-aproval: x
        """);
    ConfigFile file = ConfigFile.load(yaml, Map.of(), true, "--config");

    assertThat(file.problems())
        .containsExactly(
            yaml
                + ":3: dev: require-approval: 'pay ments' is not a tool@version or a pattern of"
                + " them (letters, digits, '.', '_', '-', '+', '@' and '*')",
            yaml + ":5: dev: approval-timeout: '0s' must be longer than zero",
            yaml
                + ":6: dev: require-aproval: unknown key (did you mean 'require-approval'?): the"
                + " keys of dev: are require-approval, approval-timeout");
    assertThat(file.dev().requireApproval())
        .extracting(ConfigFile.Value::text)
        .containsExactly("ok.*");
    assertThat(file.dev().approvalTimeout()).isEqualTo(Optional.empty());
  }

  @Test
  void bad_flags_are_refused_naming_the_flag() {
    assertThatThrownBy(() -> flags("pay ments"))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "--require-approval 'pay ments' is not a tool@version or a pattern of them"
                + " (letters, digits, '.', '_', '-', '+', '@' and '*')");
    assertThatThrownBy(() -> ApprovalPolicy.resolve(List.of("x"), Duration.ZERO, ConfigFile.none()))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("--approval-timeout must be longer than zero");
  }
}
