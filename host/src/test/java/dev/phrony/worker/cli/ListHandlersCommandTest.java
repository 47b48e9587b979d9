package dev.phrony.worker.cli;

import static dev.phrony.worker.cli.CliRun.run;
import static dev.phrony.worker.plugin.TestPlugins.descriptor;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.phrony.worker.config.HandlerOverrides;
import dev.phrony.worker.ops.OpsHttpServer;
import dev.phrony.worker.ops.Readiness;
import dev.phrony.worker.plugin.DescriptorHash;
import dev.phrony.worker.plugin.PluginLoader;
import dev.phrony.worker.plugin.TestPlugins;
import dev.phrony.worker.reload.PluginReloader;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code phrony-worker list-handlers} through picocli, with captured output. */
class ListHandlersCommandTest {

  @TempDir static Path tmp;
  static Path good;
  static Path mixed;

  @BeforeAll
  static void plugins() throws IOException {
    TestPlugins build = new TestPlugins(tmp.resolve("build"));
    good = tmp.resolve("good");
    build
        .jar()
        .handler(
            "w.Forecast",
            "ToolDescriptor.builder(\"weather.get-forecast\").version(\"1.0.0\")"
                + ".contractVersion(\"2\").maxConcurrency(32)"
                + ".sideEffectClass(SideEffectClass.READ_ONLY).build()")
        .writeTo(good.resolve("weather.jar"));
    build
        .jar()
        .handler(
            "e.Echo",
            "ToolDescriptor.builder(\"echo\").maxConcurrency(64)"
                + ".sideEffectClass(SideEffectClass.READ_ONLY).build()")
        .writeTo(good.resolve("echo/echo.jar"));

    mixed = tmp.resolve("mixed");
    build
        .jar()
        .handler("p.Pay", descriptor("payments.process-payment", "1.0.0", "non_idempotent_write"))
        .writeTo(mixed.resolve("payments.jar"));
    TestPlugins.corruptJar(mixed.resolve("broken.jar"));
  }

  @Test
  void worker_prints_what_a_running_worker_serves_from_its_handlers_endpoint() throws Exception {
    var loaded = new PluginLoader().load(good);
    var applied = HandlerOverrides.apply(java.util.List.of(), loaded.catalog());
    var served =
        new PluginReloader.Served(
            loaded, applied, 3, java.time.Instant.parse("2026-12-03T12:00:00Z"));
    try (OpsHttpServer http =
        OpsHttpServer.start(
            new InetSocketAddress("127.0.0.1", 0),
            () -> "",
            () -> Readiness.READY,
            new OpsHttpServer.Plugins() {
              @Override
              public String handlersJson() {
                return ReloadReport.handlers(served);
              }

              @Override
              public OpsHttpServer.Reply reload() {
                return new OpsHttpServer.Reply(409, "{}");
              }
            })) {
      String url = "http://127.0.0.1:" + http.address().getPort();
      CliRun table = run("list-handlers", "--worker", url);
      assertThat(table.exit()).as(table.err()).isZero();
      String local = run("list-handlers", "--plugins", good.toString()).out();
      int digest = local.indexOf("image digest: ");
      assertThat(table.out())
          .as("the local table, with the generation served before the image digest")
          .isEqualTo(
              local.substring(0, digest)
                  + "generation 3, loaded at 2026-12-03T12:00:00Z\n"
                  + local.substring(digest));

      CliRun json = run("list-handlers", "--worker", url, "--format", "json");
      JsonNode root = new ObjectMapper().readTree(json.out());
      assertThat(root.path("generation").asInt()).isEqualTo(3);
      assertThat(root.path("handlers"))
          .extracting(h -> h.path("key").asText())
          .containsExactly("echo@default", "weather.get-forecast@1.0.0");
      assertThat(root.path("image_digest").asText()).isEqualTo(loaded.imageDigest());
    }
  }

  @Test
  void worker_that_does_not_answer_is_a_usage_error_naming_the_flag() throws IOException {
    int port;
    try (var s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort();
    }
    CliRun r = run("list-handlers", "--worker", "127.0.0.1:" + port);
    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err()).contains("--worker 127.0.0.1:" + port + ": no worker answers at");
  }

  @Test
  void table_lists_handlers_and_the_image_digest() {
    CliRun r = run("list-handlers", "--plugins", good.toString());

    assertThat(r.exit()).isZero();
    assertThat(r.err()).isEmpty();
    var loaded = new PluginLoader().load(good);
    String echoHash = loaded.catalog().find("echo", "default").orElseThrow().descriptorHash();
    String weatherHash =
        loaded.catalog().find("weather.get-forecast", "1.0.0").orElseThrow().descriptorHash();
    assertThat(r.out().lines().toList())
        .containsExactly(
            row("KEY", "CONTRACT", "CONCURRENCY", "SIDE EFFECT", "PLUGIN", "HASH"),
            row(
                "echo@default",
                "1",
                "64",
                "read_only",
                good.resolve("echo").toString(),
                echoHash.substring(7, 19)),
            row(
                "weather.get-forecast@1.0.0",
                "2",
                "32",
                "read_only",
                good.resolve("weather.jar").toString(),
                weatherHash.substring(7, 19)),
            "",
            "image digest: " + loaded.imageDigest());
  }

  /** Columns as wide as their widest cell (key, plugin) or header, two spaces apart. */
  private static String row(
      String key, String contract, String max, String sideEffect, String plugin, String hash) {
    int pluginWidth = good.resolve("weather.jar").toString().length();
    return String.format(
        "%-26s  %-8s  %-11s  %-11s  %-" + pluginWidth + "s  %s",
        key,
        contract,
        max,
        sideEffect,
        plugin,
        hash);
  }

  @Test
  void json_has_the_documented_fields() throws Exception {
    CliRun r = run("list-handlers", "--plugins", good.toString(), "--format", "json");

    assertThat(r.exit()).isZero();
    JsonNode json = new ObjectMapper().readTree(r.out());
    assertThat(json.properties())
        .extracting(e -> e.getKey())
        .containsExactly("handlers", "warnings", "problems", "image_digest");
    JsonNode weather = json.get("handlers").get(1);
    assertThat(weather.properties())
        .extracting(e -> e.getKey())
        .containsExactly(
            "key",
            "tool",
            "version",
            "contract_version",
            "max_concurrency",
            "enabled",
            "side_effect_class",
            "execution",
            "descriptor_hash",
            "plugin",
            "settings");
    assertThat(weather.get("key").asText()).isEqualTo("weather.get-forecast@1.0.0");
    assertThat(weather.get("tool").asText()).isEqualTo("weather.get-forecast");
    assertThat(weather.get("version").asText()).isEqualTo("1.0.0");
    assertThat(weather.get("contract_version").asText()).isEqualTo("2");
    assertThat(weather.get("max_concurrency").asInt()).isEqualTo(32);
    assertThat(weather.get("side_effect_class").asText()).isEqualTo("read_only");
    assertThat(weather.get("execution").asText()).isEqualTo("thread");
    assertThat(weather.get("descriptor_hash").asText())
        .isEqualTo(
            DescriptorHash.of(
                new PluginLoader()
                    .load(good)
                    .catalog()
                    .find("weather.get-forecast", "1.0.0")
                    .orElseThrow()
                    .descriptor()));
    assertThat(weather.get("plugin").asText()).isEqualTo(good.resolve("weather.jar").toString());
    assertThat(json.get("handlers").get(0).get("key").asText()).isEqualTo("echo@default");
    assertThat(json.get("problems").size()).isZero();
    assertThat(json.get("image_digest").asText()).matches("sha256:[0-9a-f]{64}");
  }

  @Test
  void operator_settings_show_as_effective_values_with_where_they_came_from() throws Exception {
    Path config = tmp.resolve("worker.yaml");
    java.nio.file.Files.writeString(
        config, "handlers:\n  \"weather.*\":\n    max-concurrency: 4\n" + "    deadline: 90s\n");
    CliRun table =
        run(
            "list-handlers",
            "--plugins",
            good.toString(),
            "--config",
            config.toString(),
            "--handler",
            "echo@default:enabled=false",
            "--handler",
            "nothing.*:max-concurrency=1");

    assertThat(table.exit()).as(table.err()).isZero();
    assertThat(table.out())
        .containsPattern("echo@default\\s+1\\s+disabled\\s")
        .containsPattern("weather.get-forecast@1.0.0\\s+2\\s+4\\*\\s")
        .contains("set by the operator:\n")
        .contains("  weather.get-forecast@1.0.0: max-concurrency 4 (")
        .contains("  weather.get-forecast@1.0.0: deadline 1m30s (")
        .contains("  echo@default: enabled false (flag --handler")
        .contains("warning: ")
        .contains("nothing.*");

    CliRun json =
        run(
            "list-handlers",
            "--plugins",
            good.toString(),
            "--config",
            config.toString(),
            "--handler",
            "echo@default:enabled=false",
            "--format",
            "json");
    JsonNode root = new ObjectMapper().readTree(json.out());
    JsonNode echo = root.get("handlers").get(0);
    assertThat(echo.get("enabled").asBoolean()).isFalse();
    assertThat(echo.at("/settings/enabled/source").asText()).isEqualTo("flag");
    assertThat(echo.at("/settings/enabled/from").asText()).startsWith("--handler");
    assertThat(echo.at("/settings/max_concurrency/source").asText()).isEqualTo("plugin");
    JsonNode weather = root.get("handlers").get(1);
    assertThat(weather.get("max_concurrency").asInt()).isEqualTo(4);
    assertThat(weather.at("/settings/max_concurrency/value").asInt()).isEqualTo(4);
    assertThat(weather.at("/settings/max_concurrency/from").asText()).contains("worker.yaml");
    assertThat(weather.at("/settings/deadline/value").asText()).isEqualTo("1m30s");
    assertThat(root.get("warnings")).as(root.get("warnings").toString()).isEmpty();
  }

  @Test
  void problems_exit_3_and_the_other_handlers_are_still_listed() throws Exception {
    CliRun table = run("list-handlers", "--plugins", mixed.toString());
    assertThat(table.exit()).isEqualTo(3);
    assertThat(table.out())
        .contains("payments.process-payment@1.0.0")
        .contains("non_idempotent_write")
        .contains(
            "1 problem:\n  " + mixed.resolve("broken.jar") + ": broken.jar is not a valid jar")
        .contains("image digest: sha256:");

    CliRun json = run("list-handlers", "--plugins", mixed.toString(), "--format", "json");
    assertThat(json.exit()).isEqualTo(3);
    JsonNode problems = new ObjectMapper().readTree(json.out()).get("problems");
    assertThat(problems.size()).isEqualTo(1);
    assertThat(problems.get(0).get("plugin").asText())
        .isEqualTo(mixed.resolve("broken.jar").toString());
    assertThat(problems.get(0).get("reason").asText()).contains("is not a valid jar");
  }

  @Test
  void strict_fails_on_problems_only() {
    assertThat(run("list-handlers", "--strict", "--plugins", mixed.toString()).exit()).isEqualTo(3);
    assertThat(run("list-handlers", "--strict", "--plugins", good.toString()).exit()).isZero();
  }

  @Test
  void missing_plugins_dir_is_a_one_line_usage_error() {
    Path missing = tmp.resolve("nowhere");
    CliRun r = run("list-handlers", "--plugins", missing.toString());

    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.out()).isEmpty();
    assertThat(r.err())
        .isEqualTo(
            "phrony-worker list-handlers: plugins directory "
                + missing
                + " does not exist: create it and put plugin jars in it, or point --plugins at the "
                + "folder that holds them\n");
  }

  @Test
  void bad_flags_are_one_line_usage_errors() {
    CliRun unknown = run("list-handlers", "--plugins", good.toString(), "--colour");
    assertThat(unknown.exit()).isEqualTo(1);
    assertThat(unknown.err())
        .isEqualTo(
            "phrony-worker list-handlers: Unknown option: "
                + "'--colour' (see 'phrony-worker list-handlers --help')\n");

    CliRun format = run("list-handlers", "--plugins", good.toString(), "--format", "yaml");
    assertThat(format.exit()).isEqualTo(1);
    assertThat(format.err()).contains("--format").contains("yaml").hasLineCount(1);

    CliRun none = run();
    assertThat(none.exit()).isEqualTo(1);
    assertThat(none.err())
        .isEqualTo("phrony-worker: a command is required " + "(see 'phrony-worker --help')\n");
  }

  @Test
  void help_documents_options_and_exit_codes() {
    CliRun r = run("list-handlers", "--help");
    assertThat(r.exit()).isZero();
    assertThat(r.out())
        .contains("--plugins=DIR", "--strict", "--format=FORMAT", "table, json")
        .contains("Exit codes:")
        .containsPattern("0\\s+every plugin loaded")
        .containsPattern("1\\s+usage error")
        .containsPattern("3\\s+some plugins had problems");
  }

  @Test
  void default_plugins_dir_is_the_distributions_plugins_folder() {
    assertThat(PluginsOption.defaultPluginsDir("/opt/phrony-worker"))
        .isEqualTo(Path.of("/opt/phrony-worker/plugins"));
    assertThat(PluginsOption.defaultPluginsDir(null)).isEqualTo(Path.of("plugins"));
    assertThat(PluginsOption.defaultPluginsDir("")).isEqualTo(Path.of("plugins"));
  }
}
