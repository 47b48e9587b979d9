package dev.phrony.worker.cli;

import static dev.phrony.worker.cli.CliRun.run;
import static dev.phrony.worker.plugin.TestPlugins.descriptor;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.phrony.worker.manifest.Samples;
import dev.phrony.worker.plugin.TestPlugins;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code phrony-worker check} through picocli, against plugins built like the stock ones ({@code
 * weather.get-forecast@1.0.0} read_only, {@code payments.process-payment@1.0.0}
 * non_idempotent_write, {@code echo@default} read_only) and the shared sample manifests.
 */
class CheckCommandTest {

  @TempDir static Path tmp;
  static Path stock;
  static Path withBroken;

  @BeforeAll
  static void plugins() throws IOException {
    TestPlugins build = new TestPlugins(tmp.resolve("build"));
    stock = tmp.resolve("stock");
    withBroken = tmp.resolve("with-broken");
    for (Path dir : List.of(stock, withBroken)) {
      build
          .jar()
          .handler("w.Forecast", descriptor("weather.get-forecast", "1.0.0", "read_only"))
          .writeTo(dir.resolve("weather/weather.jar"));
      build
          .jar()
          .handler("p.Pay", descriptor("payments.process-payment", "1.0.0", "non_idempotent_write"))
          .writeTo(dir.resolve("payments/payments.jar"));
      build
          .jar()
          .handler(
              "e.Echo",
              "ToolDescriptor.builder(\"echo\").sideEffectClass(\"read_only\")" + ".build()")
          .writeTo(dir.resolve("echo/echo.jar"));
    }
    TestPlugins.corruptJar(withBroken.resolve("broken.jar"));
  }

  static CliRun check(Path manifest, String... more) {
    List<String> args =
        new ArrayList<>(
            List.of("check", "--manifest", manifest.toString(), "--plugins", stock.toString()));
    args.addAll(List.of(more));
    return run(args.toArray(String[]::new));
  }

  @Test
  void the_weather_agent_is_fully_served() throws IOException {
    CliRun r = check(Samples.weather());

    assertThat(r.exit()).as("stderr: %s", r.err()).isZero();
    assertThat(r.err()).isEmpty();
    List<String> lines = r.out().lines().toList();
    assertThat(lines.get(0)).isEqualTo("manifest: " + Samples.weather());
    assertThat(lines.get(2))
        .isEqualTo(
            "agent demo.trip-planner@0.3.0 (" + Samples.weather() + "; tools/: 0 Tool documents)");
    assertThat(lines.get(4)).matches("LINE +BINDING +AS +STATUS +DETAIL");
    assertThat(lines)
        .filteredOn(l -> l.matches("\\d+ .*"))
        .containsExactly(
            "13    weather.get-forecast@1.0.0      weather_get-forecast      served  "
                + stock.resolve("weather"),
            "16    payments.process-payment@1.0.0  payments_process-payment  served  "
                + stock.resolve("payments"),
            "19    echo@default                    echo                      served  "
                + stock.resolve("echo"));
    // the samples pin versions on bindings, which only a compiled snapshot may do
    assertThat(lines)
        .filteredOn(l -> l.startsWith("      warning: "))
        .hasSize(2)
        .first()
        .asString()
        .contains(Samples.weather() + ":14: spec.tools[0].version: the runtime's publish refuses");
    assertThat(lines.getLast()).isEqualTo("ok: 3 served (2 warnings)");

    JsonNode json = check(Samples.weather(), "--format", "json").json();
    assertThat(json.get("ok").asBoolean()).isTrue();
    assertThat(json.get("bindings"))
        .extracting(b -> b.get("status").asText())
        .containsOnly("served");
  }

  @Test
  void the_mismatch_agent_exits_3_with_each_problem_named() throws IOException {
    CliRun r = check(Samples.mismatch(), "--format", "json");

    assertThat(r.exit()).as("stderr: %s", r.err()).isEqualTo(3);
    assertThat(r.err()).isEmpty();
    JsonNode json = r.json();
    assertThat(json.properties())
        .extracting(e -> e.getKey())
        .containsExactly("manifest", "bundle", "agents", "bindings", "problems", "ok");
    assertThat(json.get("manifest").asText()).isEqualTo(Samples.mismatch().toString());
    assertThat(json.get("ok").asBoolean()).isFalse();
    JsonNode b = json.get("bindings");
    assertThat(b.size()).isEqualTo(4);
    for (JsonNode binding : b) {
      assertThat(binding.properties())
          .extracting(e -> e.getKey())
          .containsExactly(
              "agent",
              "file",
              "line",
              "path",
              "ref",
              "key",
              "wire_name",
              "route",
              "status",
              "plugin",
              "version",
              "version_from",
              "declared_side_effect_class",
              "side_effect_class_from",
              "handler_side_effect_class",
              "tool_manifest",
              "input_schema_from",
              "reason",
              "problems",
              "schema");
      assertThat(binding.get("agent").asText()).isEqualTo("demo.mismatch");
    }

    JsonNode v2 = b.get(0);
    assertThat(v2.get("ref").asText()).isEqualTo("weather.get-forecast");
    assertThat(v2.get("key").asText()).isEqualTo("weather.get-forecast@2.0.0");
    assertThat(v2.get("status").asText()).isEqualTo("missing");
    assertThat(v2.get("plugin").isNull()).isTrue();
    assertThat(v2.get("handler_side_effect_class").isNull()).isTrue();
    assertThat(v2.get("reason").asText())
        .isEqualTo(
            "no handler for weather.get-forecast@2.0.0 (version from the binding, "
                + Samples.mismatch()
                + ":14); this worker serves weather.get-forecast@1.0.0: add a plugin that serves "
                + "weather.get-forecast version 2.0.0, or bind a version served here");

    JsonNode pay = b.get(1);
    assertThat(pay.get("key").asText()).isEqualTo("payments.process-payment@1.0.0");
    assertThat(pay.get("status").asText()).isEqualTo("class_mismatch");
    assertThat(pay.get("plugin").asText()).isEqualTo(stock.resolve("payments").toString());
    assertThat(pay.get("declared_side_effect_class").asText()).isEqualTo("read_only");
    assertThat(pay.get("side_effect_class_from").asText()).isEqualTo(Samples.mismatch() + ":18");
    assertThat(pay.get("handler_side_effect_class").asText()).isEqualTo("non_idempotent_write");
    assertThat(pay.get("reason").asText())
        .startsWith(
            "the manifest ("
                + Samples.mismatch()
                + ":18) declares read_only, the handler ("
                + stock.resolve("payments")
                + ") declares non_idempotent_write: ");

    JsonNode mcp = b.get(2);
    assertThat(mcp.get("ref").asText()).isEqualTo("search.web@^1.2");
    assertThat(mcp.get("key").isNull()).isTrue();
    assertThat(mcp.get("status").asText()).isEqualTo("skipped");
    assertThat(mcp.get("declared_side_effect_class").asText()).isEqualTo("read_only");
    assertThat(mcp.get("reason").asText())
        .isEqualTo("routed to MCP server search, not to a worker");
    assertThat(mcp.get("problems").get(0).get("message").asText())
        .isEqualTo("the runtime refuses a version constraint on an MCP-backed binding");

    JsonNode crm = b.get(3);
    assertThat(crm.get("key").asText()).isEqualTo("crm.lookup-account@default");
    assertThat(crm.get("status").asText()).isEqualTo("missing");
    assertThat(crm.get("reason").asText())
        .isEqualTo(
            "no handler for crm.lookup-account@default: a binding with no tools/ entry and no"
                + " version is routed to @default: add a plugin whose handler for"
                + " crm.lookup-account leaves its version unset");
  }

  @Test
  void the_table_names_every_problem_and_the_counts() {
    CliRun r = check(Samples.mismatch());

    assertThat(r.exit()).isEqualTo(3);
    List<String> lines = r.out().lines().toList();
    assertThat(lines.get(4)).matches("LINE +BINDING +AS +STATUS +DETAIL");
    List<String> rows = lines.stream().filter(l -> l.matches("\\d+ .*")).toList();
    assertThat(rows.get(0))
        .matches(
            "13 +weather\\.get-forecast@2\\.0\\.0 +weather_get-forecast +missing +no handler "
                + "for weather\\.get-forecast@2\\.0\\.0 .*");
    assertThat(rows.get(1))
        .matches(
            "16 +payments\\.process-payment@1\\.0\\.0 +payments_process-payment +class_mismatch "
                + "+the manifest .* declares read_only, the handler .* declares non_idempotent_write: .*");
    assertThat(rows.get(2))
        .matches(
            "19 +search\\.web@\\^1\\.2 +web_search +skipped +routed to MCP server "
                + "search, not to a worker");
    assertThat(rows.get(3))
        .matches("25 +crm\\.lookup-account@default +crm_lookup-account +missing +.*");
    assertThat(lines.getLast())
        .isEqualTo("not ok: 2 missing, 1 class_mismatch, 1 skipped (3 warnings)");
  }

  @Test
  void a_ref_with_a_constraint_resolves_against_tools_and_without_one_is_keyed_default()
      throws IOException {
    Path dir = Files.createDirectories(tmp.resolve("bundle-a/tools"));
    Files.writeString(
        dir.resolve("weather.get-forecast.yaml"),
        """
        apiVersion: phrony.com/v1
        kind: Tool
        metadata: {namespace: weather, name: get-forecast, version: 1.0.0}
        spec: {side_effect_class: read_only}
        """);
    Path manifest =
        Files.writeString(
            dir.resolveSibling("agent.yaml"),
            """
        apiVersion: phrony.com/v1
        kind: Agent
        metadata: {namespace: demo, name: a, version: 1.0.0}
        spec:
          tools:
            - ref: weather.get-forecast@^1.0
            - ref: echo@^1
              side_effect_class: read_only
            - ref: payments.process-payment@~1.0
              side_effect_class: non_idempotent_write
        """);

    CliRun r = check(manifest, "--format", "json");

    assertThat(r.exit()).isEqualTo(3);
    JsonNode b = r.json().get("bindings");
    assertThat(b)
        .extracting(n -> n.get("key").asText())
        .containsExactly(
            "weather.get-forecast@1.0.0", "echo@^1@default", "payments.process-payment@default");
    assertThat(b)
        .extracting(n -> n.get("status").asText())
        .containsExactly("served", "missing", "manifest_error");
    assertThat(b.get(1).get("reason").asText())
        .startsWith(
            "no handler can serve "
                + "echo@^1@default: the ref echo@^1 is not of the form namespace.name[@constraint]");
    assertThat(b.get(2).get("reason").asText())
        .startsWith(
            "the runtime refuses it: tool payments.process-payment not found in bundle tools/");
    assertThat(b.get(2).get("problems").get(0).get("code").asText())
        .isEqualTo("tool_not_in_bundle");
  }

  @Test
  void a_binding_without_a_side_effect_class_differs_from_its_handler() throws IOException {
    Path manifest =
        Files.writeString(
            tmp.resolve("unclassified.yaml"),
            "apiVersion: phrony.com/v1\nkind: Agent\nmetadata: {namespace: d, name: a, version:"
                + " 1.0.0}\nspec:\n  tools:\n    - ref: echo\n");

    CliRun r = check(manifest, "--format", "json");

    assertThat(r.exit()).isEqualTo(3);
    JsonNode echo = r.json().get("bindings").get(0);
    assertThat(echo.get("status").asText()).isEqualTo("class_mismatch");
    assertThat(echo.get("declared_side_effect_class").isNull()).isTrue();
    assertThat(echo.get("handler_side_effect_class").asText()).isEqualTo("read_only");
    assertThat(echo.get("reason").asText())
        .startsWith("the manifest declares no " + "side_effect_class")
        .endsWith("declare side_effect_class: read_only");
  }

  @Test
  void malformed_yaml_is_a_one_line_usage_error_naming_file_and_line() throws IOException {
    Path manifest =
        Files.writeString(
            tmp.resolve("broken.yaml"),
            "kind: Agent\nspec:\n  tools:\n    - ref: echo\n     side_effect_class: read_only\n");

    CliRun r = check(manifest);

    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.out()).isEmpty();
    assertThat(r.err())
        .startsWith(
            "phrony-worker check: manifest " + manifest + ": YAML syntax error at line 5, column ")
        .hasLineCount(1);
  }

  @Test
  void a_binding_without_ref_is_a_usage_error_naming_its_path_and_line() throws IOException {
    Path manifest =
        Files.writeString(
            tmp.resolve("noref.yaml"),
            "kind: Agent\nspec:\n  tools:\n    - ref: echo\n    - version: 1.0.0\n");

    CliRun r = check(manifest);

    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err())
        .isEqualTo(
            "phrony-worker check: manifest "
                + manifest
                + ": "
                + "spec.tools[1].ref is missing at line 5: give every binding a ref (the tool's "
                + "namespace.name, e.g. weather.get-forecast@1.0.0)\n");
  }

  @Test
  void a_missing_manifest_is_a_usage_error() {
    Path missing = tmp.resolve("nowhere.yaml");

    CliRun r = check(missing);

    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.out()).isEmpty();
    assertThat(r.err())
        .isEqualTo(
            "phrony-worker check: manifest "
                + missing
                + " does not "
                + "exist: check the path given with --manifest\n");

    CliRun none = run("check", "--plugins", stock.toString());
    assertThat(none.exit()).isEqualTo(1);
    assertThat(none.err()).contains("Missing required option: '--manifest=FILE'").hasLineCount(1);
  }

  @Test
  void a_missing_plugins_dir_is_a_usage_error() {
    CliRun r =
        run(
            "check",
            "--manifest",
            Samples.weather().toString(),
            "--plugins",
            tmp.resolve("no-plugins").toString());

    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err()).startsWith("phrony-worker check: plugins directory ").hasLineCount(1);
  }

  @Test
  void plugin_problems_go_to_stderr_and_fail_only_with_strict() {
    String[] args = {
      "check", "--manifest", Samples.weather().toString(), "--plugins", withBroken.toString()
    };

    CliRun lenient = run(args);
    assertThat(lenient.exit()).isZero();
    assertThat(lenient.out()).endsWith("ok: 3 served (2 warnings)\n");
    assertThat(lenient.err())
        .isEqualTo(
            "phrony-worker check: plugin "
                + withBroken.resolve("broken.jar")
                + " not loaded: broken.jar is not a valid jar (zip "
                + "END header not found): rebuild it, or remove it from the plugins directory\n");

    List<String> strict = new ArrayList<>(List.of(args));
    strict.add("--strict");
    assertThat(run(strict.toArray(String[]::new)).exit()).isEqualTo(3);
  }

  @Test
  void help_documents_options_statuses_and_exit_codes() {
    CliRun r = run("check", "--help");

    assertThat(r.exit()).isZero();
    assertThat(r.out())
        .contains("--manifest=FILE", "--plugins=DIR", "--strict", "--format=FORMAT", "table, json")
        .contains(
            "served",
            "missing",
            "version_outside_constraint",
            "manifest_error",
            "class_mismatch",
            "schema_mismatch",
            "skipped")
        .containsPattern("0\\s+every worker-routed binding is served")
        .containsPattern("1\\s+usage error")
        .containsPattern("3\\s+some bindings are missing");
    assertThat(run("--help").out()).contains("check");
  }
}
