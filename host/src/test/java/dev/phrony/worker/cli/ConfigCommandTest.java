package dev.phrony.worker.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.phrony.worker.config.Settings;
import dev.phrony.worker.warmup.WarmUpBudget;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code phrony-worker config} and the layering behind it (flag > env > worker.yaml > default)
 * through picocli, with an injected environment and distribution home.
 */
class ConfigCommandTest {
  private static final String TOKEN = "tok-3f9a1c7e5b";

  @TempDir Path home;

  private final Map<String, String> env = new HashMap<>();

  private CliRun run(String... args) {
    return CliRun.execute(PhronyWorkerCommand.newCommandLine(env, Optional.of(home)), args);
  }

  private JsonNode config(String... args) throws IOException {
    List<String> all = new ArrayList<>(List.of("config", "--format", "json"));
    all.addAll(List.of(args));
    CliRun r = run(all.toArray(String[]::new));
    assertThat(r.exit()).as("stderr: %s", r.err()).isZero();
    return new ObjectMapper().readTree(r.out()).get("settings");
  }

  private Path workerYaml(String text) throws IOException {
    Path f = home.resolve("conf/worker.yaml");
    Files.createDirectories(f.getParent());
    return Files.writeString(f, text);
  }

  @Test
  void a_flag_beats_the_environment_beats_the_file_beats_the_default() throws IOException {
    Path file =
        workerYaml(
            """
        # comment
        drain-timeout: 45s
        orphan-retention: 2d
        max-result-size: 1000
        strict: true
        """);
    env.put("PHRONY_WORKER_DRAIN_TIMEOUT", "50s");
    env.put("PHRONY_WORKER_ORPHAN_RETENTION", "3d");

    JsonNode s = config("--drain-timeout", "55s");

    assertThat(s.at("/drain-timeout/value").asText()).isEqualTo("55s");
    assertThat(s.at("/drain-timeout/source").asText()).isEqualTo("flag");
    assertThat(s.at("/orphan-retention/value").asText()).isEqualTo("3d");
    assertThat(s.at("/orphan-retention/source").asText()).isEqualTo("env");
    assertThat(s.at("/orphan-retention/from").asText()).isEqualTo("PHRONY_WORKER_ORPHAN_RETENTION");
    assertThat(s.at("/max-result-size/value").asInt()).isEqualTo(1000);
    assertThat(s.at("/max-result-size/source").asText()).isEqualTo("file");
    assertThat(s.at("/max-result-size/from").asText()).isEqualTo(file + ":4");
    assertThat(s.at("/strict/value").asBoolean()).isTrue();
    assertThat(s.at("/keepalive/source").asText()).isEqualTo("default");
    assertThat(s.at("/log-level/value").asText()).isEqualTo("INFO");
    assertThat(s.at("/http/value").asText()).isEqualTo("127.0.0.1:9464");
  }

  @Test
  void the_reference_workers_environment_names_are_read() throws IOException {
    env.put("PHRONY_RUNTIME_ADDR", "runtime.internal:7777");
    env.put("WORKER_ID", "w-7");
    env.put("WORKER_WORKLOAD_IDENTITY", "spiffe://x/y");
    env.put("WORKER_IMAGE_DIGEST", "sha256:abc");
    env.put("PHRONY_WORKER_STATE_DIR", home.resolve("st").toString());

    JsonNode s = config();

    assertThat(s.at("/runtime/value").asText()).isEqualTo("runtime.internal:7777");
    assertThat(s.at("/runtime/from").asText()).isEqualTo("PHRONY_RUNTIME_ADDR");
    assertThat(s.at("/worker-id/value").asText()).isEqualTo("w-7");
    assertThat(s.at("/workload-identity/from").asText()).isEqualTo("WORKER_WORKLOAD_IDENTITY");
    assertThat(s.at("/image-digest/value").asText()).isEqualTo("sha256:abc");
    assertThat(s.at("/state-dir/value").asText()).isEqualTo(home.resolve("st").toString());
  }

  @Test
  void every_setting_of_run_has_an_env_name_a_file_key_and_a_line_in_conf_worker_yaml()
      throws IOException {
    CommandLine.Model.CommandSpec spec =
        PhronyWorkerCommand.newCommandLine(env, Optional.of(home))
            .getSubcommands()
            .get("run")
            .getCommandSpec();
    Set<String> keys = new TreeSet<>();
    Settings.of(spec).forEach(o -> keys.add(Settings.key(o)));
    assertThat(keys)
        .contains(
            "plugins",
            "state-dir",
            "runtime",
            "drain-timeout",
            "http",
            "log-format",
            "log-level",
            "tls",
            "tls-ca",
            "tls-cert",
            "tls-key",
            "token-file",
            "allow-insecure-token")
        .doesNotContain("config", "help", "version");

    // The shipped conf/worker.yaml documents each one as a commented "# key: default" line.
    String shipped = Files.readString(Path.of("..", "conf", "worker.yaml"));
    Set<String> documented = new TreeSet<>();
    Matcher m = Pattern.compile("(?m)^# ([a-z-]+):( |$)").matcher(shipped);
    while (m.find()) {
      documented.add(m.group(1));
    }
    // handlers: is a mapping of its own (per-handler settings, not a flag of run).
    assertThat(documented.remove("handlers")).isTrue();
    assertThat(documented).isEqualTo(keys);
    // Uncommented as it ships, it is a valid, empty configuration.
    workerYaml(shipped);
    assertThat(config().at("/drain-timeout/source").asText()).isEqualTo("default");
  }

  @Test
  void handler_rules_are_listed_with_where_each_came_from() throws IOException {
    Path file =
        workerYaml(
            """
        handlers:
          "payments.*":
            deadline: 30s
        """);
    env.put("PHRONY_WORKER_HANDLERS", "echo@default:enabled=false");
    CliRun r = run("config", "--format", "json", "--handler", "weather.*:max-concurrency=4");

    assertThat(r.exit()).as("stderr: %s", r.err()).isZero();
    JsonNode handlers = new ObjectMapper().readTree(r.out()).get("handlers");
    assertThat(handlers)
        .extracting(
            h ->
                h.get("handler").asText()
                    + " "
                    + h.get("setting").asText()
                    + "="
                    + h.get("value").asText()
                    + " "
                    + h.get("source").asText()
                    + " "
                    + h.get("from").asText())
        .containsExactlyInAnyOrder(
            "payments.* deadline=30s file " + file + ":3",
            "echo@default enabled=false env PHRONY_WORKER_HANDLERS",
            "weather.* max-concurrency=4 flag --handler");
  }

  @Test
  void a_runtime_address_that_cannot_be_dialled_is_refused_at_start_naming_the_flag() {
    CliRun r = run("config", "--runtime", "127.0.0.1:99999");
    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err())
        .contains(
            "--runtime: port 99999 in '127.0.0.1:99999' is out of range:"
                + " use HOST:PORT with a port from 1 to 65535, e.g. 127.0.0.1:7777");
    assertThat(run("config", "--runtime", "nohost").err())
        .contains("--runtime: 'nohost' is not HOST:PORT");
    assertThat(run("config", "--runtime", "::1:7777").err())
        .contains("an IPv6 address goes in brackets");
    assertThat(run("config", "--watch-plugins", "maybe").err())
        .contains("--watch-plugins: 'maybe' is neither on nor off");
    assertThat(run("config", "--watch-plugins", "off").exit()).isZero();
    for (String ok : new String[] {"[::1]:7777", "runtime.internal:443", "dns:///rt:7777"}) {
      CliRun good = run("config", "--runtime", ok);
      assertThat(good.exit()).as("%s: %s", ok, good.err()).isZero();
    }
  }

  @Test
  void unknown_keys_wrong_types_and_bad_durations_name_the_file_line_and_key() throws IOException {
    Path file =
        workerYaml(
            """
        drain-timeout: 3 s
        drain-timout: 3s
        strict: "yes"
        max-inbound-size: lots
        http: [127.0.0.1:1]
        log-level: loud
        """);
    CliRun r = run("run");
    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err().lines())
        .containsExactly(
            "phrony-worker run: "
                + file
                + ":1: drain-timeout: '3 s' is not a duration: use a number"
                + " and a unit (d, h, m, s, ms), e.g. 7d, 12h, 30m, 45s, 500ms or 1h30m, or ISO-8601"
                + " like PT30S",
            "phrony-worker run: "
                + file
                + ":2: drain-timout: unknown key (did you mean"
                + " 'drain-timeout'?)",
            "phrony-worker run: "
                + file
                + ":3: strict: expected true or false, found the text 'yes'",
            "phrony-worker run: "
                + file
                + ":4: max-inbound-size: expected a whole number, found the"
                + " text 'lots'",
            "phrony-worker run: " + file + ":5: http: expected a single value, found a list",
            "phrony-worker run: "
                + file
                + ":6: log-level: 'loud' is not a log level: use one of"
                + " TRACE, DEBUG, INFO, WARN, ERROR");
  }

  @Test
  void yaml_that_does_not_parse_or_is_not_a_mapping_is_refused_with_its_line() throws IOException {
    Path file = workerYaml("runtime: 127.0.0.1:7777\nhttp: [\n");
    CliRun r = run("config");
    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err())
        .isEqualTo(
            "phrony-worker config: "
                + file
                + ":2: not valid YAML: while"
                + " parsing a flow node; expected the node content, but found '<stream end>'\n");

    workerYaml("- a\n- b\n");
    r = run("config");
    assertThat(r.err())
        .contains(file + ":1: expected a mapping of settings (key: value), found a" + " list");
  }

  @Test
  void the_leaked_loader_limit_is_a_setting_of_at_least_one() {
    env.put("PHRONY_WORKER_MAX_LEAKED_LOADERS", "5");
    CliRun ok = run("config");
    assertThat(ok.exit()).as("stderr: %s", ok.err()).isZero();
    assertThat(ok.out()).contains("max-leaked-loaders").contains("5");
    CliRun r = run("config", "--max-leaked-loaders", "0");
    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err()).contains("--max-leaked-loaders: 0 is too small: use 1 or more");
  }

  @Test
  void the_warm_up_is_off_a_number_of_calls_or_a_duration() {
    CliRun def = run("config");
    assertThat(def.exit()).as("stderr: %s", def.err()).isZero();
    assertThat(def.out()).contains("warm-up").contains(WarmUpBudget.DEFAULT);
    env.put("PHRONY_WORKER_WARM_UP", "off");
    CliRun off = run("config");
    assertThat(off.exit()).as("stderr: %s", off.err()).isZero();
    assertThat(off.out()).contains("warm-up").contains("off");
    CliRun bad = run("config", "--warm-up", "soon");
    assertThat(bad.exit()).isEqualTo(1);
    assertThat(bad.err())
        .contains("--warm-up")
        .contains(
            "'soon' is not a warm-up: use off, a number of calls (e.g. 200000) or a duration");
    CliRun tooLong = run("config", "--warm-up", "5m");
    assertThat(tooLong.exit()).isEqualTo(1);
    assertThat(tooLong.err()).contains("'5m' is too long a warm-up: at most 60s, or off");
  }

  @Test
  void bad_environment_values_name_the_variable() {
    env.put("PHRONY_WORKER_KEEPALIVE", "soon");
    env.put("PHRONY_WORKER_TLS", "maybe");
    CliRun r = run("config");
    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err())
        .contains("phrony-worker config: PHRONY_WORKER_KEEPALIVE: 'soon' is not a" + " duration")
        .contains(
            "phrony-worker config: PHRONY_WORKER_TLS: 'maybe' is not a"
                + " boolean: use true or false");
  }

  @Test
  void a_missing_default_file_is_fine_a_missing_explicit_one_is_not() throws IOException {
    JsonNode s = config();
    assertThat(s.at("/runtime/value").asText()).isEqualTo("127.0.0.1:7777");

    Path missing = home.resolve("nope.yaml");
    CliRun r = run("run", "--config", missing.toString());
    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err())
        .isEqualTo(
            "phrony-worker run: config file "
                + missing
                + " (--config) does"
                + " not exist: fix the path, or leave it unset to use the defaults\n");

    env.put("PHRONY_WORKER_CONFIG", missing.toString());
    assertThat(run("config").err()).contains("(PHRONY_WORKER_CONFIG) does not exist");
  }

  @Test
  void an_explicit_config_file_is_read_instead_of_the_default() throws IOException {
    workerYaml("worker-id: from-default\n");
    Path other = Files.writeString(home.resolve("other.yaml"), "worker-id: from-other\n");
    assertThat(config("--config", other.toString()).at("/worker-id/value").asText())
        .isEqualTo("from-other");
    env.put("PHRONY_WORKER_CONFIG", other.toString());
    assertThat(config().at("/worker-id/value").asText()).isEqualTo("from-other");
  }

  @Test
  void the_yaml_format_is_the_same_document() throws IOException {
    CliRun r = run("config", "--worker-id", "w-1");
    assertThat(r.exit()).isZero();
    JsonNode doc = new YAMLMapper().readTree(r.out());
    assertThat(doc.at("/settings/worker-id/value").asText()).isEqualTo("w-1");
    assertThat(doc.at("/config_file/path").asText())
        .isEqualTo(home.resolve("conf/worker.yaml").toString());
    assertThat(doc.at("/config_file/found").asBoolean()).isFalse();
  }

  @Test
  void the_token_is_redacted_and_never_printed() throws IOException {
    env.put("PHRONY_WORKER_TOKEN", TOKEN);
    CliRun r = run("config", "--format", "json", "--tls");
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out()).doesNotContain(TOKEN);
    JsonNode s = new ObjectMapper().readTree(r.out()).get("settings");
    assertThat(s.at("/token/value").asText()).isEqualTo("<redacted>");
    assertThat(s.at("/token/from").asText()).isEqualTo("PHRONY_WORKER_TOKEN");

    Path tokenFile = Files.writeString(home.resolve("token"), TOKEN + "\n");
    r = run("config", "--tls", "--token-file", tokenFile.toString());
    assertThat(r.out()).doesNotContain(TOKEN).contains(tokenFile.toString());
  }

  @Test
  void a_token_over_plaintext_is_refused_without_printing_it() throws IOException {
    env.put("PHRONY_WORKER_TOKEN", TOKEN);
    CliRun r = run("run");
    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err())
        .isEqualTo(
            "phrony-worker run: PHRONY_WORKER_TOKEN: a bearer token is only"
                + " sent over TLS: turn on TLS (--tls), or allow plaintext with --allow-insecure-token"
                + " when the hop is trusted (a sidecar on localhost)\n");

    env.clear();
    Path tokenFile = Files.writeString(home.resolve("token"), TOKEN);
    workerYaml("token-file: " + tokenFile + "\n");
    r = run("config");
    assertThat(r.err())
        .startsWith(
            "phrony-worker config: "
                + home.resolve("conf/worker.yaml")
                + ":1: token-file: a bearer token is only sent over TLS")
        .doesNotContain(TOKEN);
    assertThat(run("config", "--allow-insecure-token").exit()).isZero();
  }

  @Test
  void tls_files_must_exist_and_a_client_cert_needs_its_key() {
    CliRun r = run("config", "--tls-cert", home.resolve("c.pem").toString());
    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err().lines())
        .containsExactly(
            "phrony-worker config: --tls-cert: " + home.resolve("c.pem") + " does not exist",
            "phrony-worker config: --tls-cert: a client certificate needs its key: set tls-key too");
  }

  @Test
  void the_http_endpoint_is_host_port_or_none() throws IOException {
    assertThat(config("--http", "none").at("/http/value").asText()).isEqualTo("none");
    assertThat(config("--http", "[::1]:9000").at("/http/value").asText()).isEqualTo("[::1]:9000");
    CliRun r = run("config", "--http", "9464");
    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err()).contains("--http").contains("'9464' is not HOST:PORT");
  }
}
