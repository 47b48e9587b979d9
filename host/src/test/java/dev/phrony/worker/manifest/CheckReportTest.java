package dev.phrony.worker.manifest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.groups.Tuple.tuple;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolCall;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.contract.Contracts;
import dev.phrony.worker.contract.Fixtures;
import dev.phrony.worker.manifest.CheckReport.Row;
import dev.phrony.worker.manifest.CheckReport.Status;
import dev.phrony.worker.plugin.HandlerCatalog;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The fixture bundles checked against handlers made in this JVM. */
class CheckReportTest {
  @TempDir Path tmp;

  /** A handler that only describes itself. */
  record Described(ToolDescriptor descriptor) implements ToolHandler {
    @Override
    public ToolResult handle(ToolCall call) {
      return ToolResult.json("{}");
    }
  }

  static final String PAYMENT_SCHEMA =
      """
      {"type":"object","required":["amount","currency","payee"],"properties":{
      "amount":{"type":"number","exclusiveMinimum":0},
      "currency":{"type":"string","pattern":"^[A-Z]{3}$"},
      "payee":{"type":"string","pattern":"\\\\S"},
      "processing_ms":{"type":"integer","minimum":0,"maximum":60000}}}""";

  static HandlerCatalog.Entry handler(String key, SideEffectClass c, String schema) {
    String[] k = key.split("@");
    ToolDescriptor.Builder b = ToolDescriptor.builder(k[0]).version(k[1]).sideEffectClass(c);
    if (schema != null) {
      b.inputSchema(schema);
    }
    return HandlerCatalog.Entry.of(new Described(b.build()), "plugins/" + k[0]);
  }

  static HandlerCatalog catalog(HandlerCatalog.Entry... entries) {
    return HandlerCatalog.of(Arrays.asList(entries));
  }

  static HandlerCatalog stock() {
    return catalog(
        handler(
            "payments.process-payment@1.0.0", SideEffectClass.NON_IDEMPOTENT_WRITE, PAYMENT_SCHEMA),
        handler(
            "weather.get-forecast@1.0.0",
            SideEffectClass.READ_ONLY,
            "{\"type\":\"object\",\"required\":[\"city\"],\"properties\":{\"city\":{\"type\":\"string\"}}}"),
        handler("echo@default", SideEffectClass.READ_ONLY, null));
  }

  static CheckReport check(Path manifest, HandlerCatalog catalog) {
    return CheckReport.check(manifest.toString(), Contracts.load(manifest), catalog);
  }

  static Map<String, Row> byWireName(CheckReport r) {
    return r.rows().stream()
        .collect(Collectors.toMap(x -> x.binding().wireName(), Function.identity()));
  }

  @Test
  void the_desk_is_served_with_its_schema_warnings_named() {
    CheckReport r = check(Fixtures.desk(), stock());

    assertThat(r.ok()).isTrue();
    assertThat(r.rows())
        .extracting(x -> x.binding().wireName(), Row::status)
        .containsExactly(
            tuple("pay", Status.SERVED),
            tuple("forecast", Status.SERVED),
            tuple("echo", Status.SERVED),
            tuple("web_search", Status.SKIPPED));
    assertThat(r.rows().getFirst().schemaFindings())
        .extracting(SchemaDiff.Finding::severity, SchemaDiff.Finding::pointer)
        .containsExactly(tuple(SchemaDiff.Severity.WARNING, "/properties/payee"));
    assertThat(r.table())
        .contains("payments.process-payment@1.0.0  pay ")
        .contains(
            "      warning: input schema /properties/payee: the handler's schema has pattern \"\\\\S\"")
        .endsWith("ok: 3 served, 1 skipped (1 warning)\n");
  }

  @Test
  void each_disagreement_has_its_status_and_reason() {
    HandlerCatalog handlers =
        catalog(
            handler("payments.process-payment@1.0.0", SideEffectClass.NON_IDEMPOTENT_WRITE, null),
            handler("weather.get-forecast@1.0.0", SideEffectClass.READ_ONLY, null),
            handler("notes.add@1.0.0", SideEffectClass.NON_IDEMPOTENT_WRITE, null),
            handler("ledger.post@1.0.0", SideEffectClass.IRREVERSIBLE_ACTION, null),
            handler(
                "orders.create@1.0.0",
                SideEffectClass.NON_IDEMPOTENT_WRITE,
                """
                {"type":"object","required":["sku","quantity"],"additionalProperties":false,
                 "properties":{"sku":{"type":"string","pattern":"^[A-Z0-9-]+$"},
                 "quantity":{"type":"integer","minimum":1},
                 "priority":{"type":"string","enum":["low","high"]}}}"""),
            handler("inventory.count@default", SideEffectClass.READ_ONLY, null),
            handler("audit.log@1.0.0", SideEffectClass.IRREVERSIBLE_ACTION, null),
            handler("metrics.emit@default", SideEffectClass.READ_ONLY, null));

    CheckReport r = check(Fixtures.drift(), handlers);
    Map<String, Row> rows = byWireName(r);

    assertThat(r.ok()).isFalse();
    assertThat(rows.get("pay").status()).isEqualTo(Status.VERSION_OUTSIDE_CONSTRAINT);
    assertThat(rows.get("forecast").status()).isEqualTo(Status.CLASS_MISMATCH);
    assertThat(rows.get("forecast").reason().orElseThrow())
        .startsWith(
            "the manifest ("
                + Fixtures.drift().resolveSibling("tools/weather.get-forecast.yaml")
                + ":11) declares idempotent_write, the handler (plugins/weather.get-forecast)"
                + " declares read_only");
    assertThat(rows.get("add_note").reason().orElseThrow())
        .startsWith("the manifest (" + Fixtures.drift() + ":23) declares read_only");
    assertThat(rows.get("log").status()).isEqualTo(Status.CLASS_MISMATCH);
    assertThat(rows.get("emit").reason().orElseThrow())
        .startsWith("the manifest declares no side_effect_class");
    assertThat(rows.get("lookup").status()).isEqualTo(Status.MANIFEST_ERROR);
    assertThat(rows.get("lookup").reason().orElseThrow())
        .startsWith("the runtime refuses it: tool crm.lookup not found in bundle tools/");
    assertThat(rows.get("post").status()).isEqualTo(Status.MANIFEST_ERROR);
    assertThat(rows.get("count").status()).isEqualTo(Status.SERVED);
    Row order = rows.get("order");
    assertThat(order.status()).isEqualTo(Status.SCHEMA_MISMATCH);
    assertThat(order.schemaFindings())
        .extracting(f -> f.severity().name(), SchemaDiff.Finding::pointer)
        .containsExactly(
            tuple("ERROR", "/properties/sku"),
            tuple("ERROR", "/properties/quantity"),
            tuple("ERROR", "/properties/note"),
            tuple("WARNING", "/properties/sku"),
            tuple("WARNING", "/properties/quantity"),
            tuple("WARNING", "/properties/priority"),
            tuple("WARNING", "/additionalProperties"));
    assertThat(order.schemaFindings().get(1).message())
        .startsWith("type differs: the manifest allows string, the handler accepts only integer");
    assertThat(r.table())
        .endsWith(
            "not ok: 1 served, 1 version_outside_constraint, 2 manifest_error, 4 class_mismatch,"
                + " 1 schema_mismatch (4 warnings)\n");
  }

  @Test
  void a_pinned_version_the_worker_does_not_serve_says_which_it_does() throws IOException {
    Files.createDirectories(tmp.resolve("tools"));
    Files.writeString(
        tmp.resolve("tools/t.pay.yaml"),
        """
        apiVersion: phrony.com/v1
        kind: Tool
        metadata: {namespace: t, name: pay, version: 1.0.0}
        spec: {side_effect_class: read_only}
        """);
    Path agent =
        Files.writeString(
            tmp.resolve("agent.yaml"),
            """
            apiVersion: phrony.com/v1
            kind: Agent
            metadata: {namespace: t, name: a, version: 1.0.0}
            spec:
              tools:
                - ref: t.pay@^1.0
            """);

    Row row =
        check(agent, catalog(handler("t.pay@1.2.0", SideEffectClass.READ_ONLY, null)))
            .rows()
            .getFirst();

    assertThat(row.status()).isEqualTo(Status.MISSING);
    assertThat(row.reason().orElseThrow())
        .isEqualTo(
            "no handler for t.pay@1.0.0 (version from the Tool document "
                + tmp.resolve("tools/t.pay.yaml")
                + ":3); this worker serves t.pay@1.2.0: it satisfies the ref's @^1.0, so publish"
                + " the Tool document with version 1.2.0 (phrony-worker tool-manifest"
                + " t.pay@1.2.0), or add a plugin that serves t.pay@1.0.0");
  }

  @Test
  void a_bundle_checks_each_member_against_its_own_folder() {
    CheckReport r = check(Fixtures.bundle(), stock());

    assertThat(r.ok()).isTrue();
    assertThat(r.rows())
        .extracting(Row::agent, x -> x.binding().wireName(), Row::status)
        .containsExactly(
            tuple("fixtures.orchestrator", "ask_payments", Status.SKIPPED),
            tuple("fixtures.payments-specialist", "process_payment", Status.SERVED));
    assertThat(r.json()).contains("\"bundle\" : \"fixtures.front-desk@1.0.0\"");
    List<String> lines = r.table().lines().toList();
    assertThat(lines).contains("bundle:   fixtures.front-desk@1.0.0");
  }
}
