package dev.phrony.worker.contract;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.groups.Tuple.tuple;

import dev.phrony.worker.contract.ResolvedBinding.Route;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Agent manifests resolved against their bundle as the runtime resolves them. */
class ContractsTest {
  @TempDir Path tmp;

  private Path write(String relative, String text) throws IOException {
    Path p = tmp.resolve(relative);
    Files.createDirectories(p.getParent());
    return Files.writeString(p, text);
  }

  /** An Agent document with {@code tools} as the body of spec.tools (indented 4). */
  private static String agent(String tools) {
    return """
        apiVersion: phrony.com/v1
        kind: Agent
        metadata: {name: a, namespace: demo, version: 1.0.0}
        spec:
          tools:
        """
        + tools.indent(4);
  }

  private static String tool(String id, String version, String sideEffectClass) {
    int dot = id.indexOf('.');
    return """
        apiVersion: phrony.com/v1
        kind: Tool
        metadata: {namespace: %s, name: %s, version: %s}
        spec:
          side_effect_class: %s
        """
        .formatted(id.substring(0, dot), id.substring(dot + 1), version, sideEffectClass);
  }

  private static ResolvedBinding only(LoadedManifest m) {
    assertThat(m.bindings()).hasSize(1);
    return m.bindings().getFirst();
  }

  @Test
  void a_constraint_resolves_against_the_tool_document_which_fills_what_the_binding_leaves_unset() {
    LoadedManifest m = Contracts.load(Fixtures.desk());

    assertThat(m.allProblems()).isEmpty();
    ResolvedAgent desk = m.agents().getFirst();
    assertThat(desk.document().id()).isEqualTo("fixtures.desk");
    assertThat(desk.bundle().root()).isEqualTo(Fixtures.desk().getParent());
    assertThat(desk.bindings())
        .extracting(
            ResolvedBinding::key,
            ResolvedBinding::wireName,
            ResolvedBinding::route,
            b -> b.sideEffectClass().orElse(null))
        .containsExactly(
            tuple("payments.process-payment@1.0.0", "pay", Route.WORKER, "non_idempotent_write"),
            tuple("weather.get-forecast@1.0.0", "forecast", Route.WORKER, "read_only"),
            tuple("echo@default", "echo", Route.WORKER, "read_only"),
            tuple("search.web@default", "web_search", Route.MCP, "read_only"));
    ResolvedBinding pay = desk.bindings().getFirst();
    Path tools = Fixtures.desk().resolveSibling("tools");
    assertThat(pay.constraint()).contains("^1.0");
    assertThat(pay.versionFrom().orElseThrow())
        .isEqualTo(
            new ResolvedBinding.Origin(tools.resolve("payments.process-payment.yaml"), 7, true));
    assertThat(pay.description()).contains("Pays an amount to a payee.");
    assertThat(pay.inputSchemaFrom())
        .contains(Fixtures.desk().resolveSibling("schemas/payment-input.json"));
    assertThat(pay.inputSchema().orElseThrow().at("/required").toString())
        .isEqualTo("[\"amount\",\"currency\",\"payee\"]");
    // the binding names no policies, so the tool's defaults apply; the agent's own are separate
    assertThat(pay.policies())
        .extracting(PolicyDocument::id)
        .containsExactly("fixtures.large-payment");
    assertThat(desk.policies()).extracting(PolicyDocument::id).containsExactly("fixtures.audit");
    ResolvedBinding forecast = desk.bindings().get(1);
    assertThat(forecast.inputSchemaFrom()).contains(tools.resolve("weather.get-forecast.yaml"));
    assertThat(forecast.inputSchema().orElseThrow().toString())
        .isEqualTo(
            "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}");
    // no namespace.name: no catalog entry is looked up, and the key is the ref @default
    assertThat(desk.bindings().get(2).toolDocument()).isEmpty();
    assertThat(desk.bindings().get(3).target()).isEqualTo("MCP server search");
  }

  @Test
  void each_refusal_of_the_runtime_is_a_problem_with_its_file_line_and_code() {
    LoadedManifest m = Contracts.load(Fixtures.drift());
    Map<String, ResolvedBinding> byName =
        m.bindings().stream()
            .collect(java.util.stream.Collectors.toMap(ResolvedBinding::wireName, b -> b));
    Path tools = Fixtures.drift().resolveSibling("tools");

    assertThat(byName.get("pay").problems())
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.code()).isEqualTo(Problem.VERSION_OUTSIDE_CONSTRAINT);
              assertThat(p.place()).isEqualTo(Fixtures.drift() + ":17");
              assertThat(p.message())
                  .startsWith(
                      "tool payments.process-payment version 1.0.0 does not satisfy constraint"
                          + " ^2.0");
            });
    assertThat(byName.get("lookup").problems())
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.code()).isEqualTo(Problem.TOOL_NOT_IN_BUNDLE);
              assertThat(p.where()).isEqualTo("spec.tools[3].ref");
              assertThat(p.fix()).contains("tools/crm.lookup.yaml");
            });
    assertThat(byName.get("lookup").key()).isEqualTo("crm.lookup@default");
    assertThat(byName.get("post").problems())
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.code()).isEqualTo(Problem.UNKNOWN_SIDE_EFFECT_CLASS);
              assertThat(p.place()).isEqualTo(tools.resolve("ledger.post.yaml") + ":11");
            });
    // a binding's own class wins over its Tool document's
    assertThat(byName.get("add_note").sideEffectClass()).contains("read_only");
    assertThat(byName.get("add_note").sideEffectClassFrom().orElseThrow().toolDocument()).isFalse();
    assertThat(byName.get("forecast").sideEffectClass()).contains("idempotent_write");
    // no constraint and no tools/ entry: routed to @default, which is no problem
    assertThat(byName.get("count").key()).isEqualTo("inventory.count@default");
    assertThat(byName.get("count").problems()).isEmpty();
  }

  @Test
  void a_bundle_resolves_its_root_and_each_member_against_the_members_own_folder() {
    LoadedManifest m = Contracts.load(Fixtures.bundle());

    assertThat(m.allProblems()).isEmpty();
    assertThat(m.bundle()).contains("fixtures.front-desk@1.0.0");
    assertThat(m.agents())
        .extracting(a -> a.document().id(), a -> a.bundle().root())
        .containsExactly(
            tuple("fixtures.orchestrator", Fixtures.bundle().getParent()),
            tuple("fixtures.payments-specialist", Fixtures.bundle().resolveSibling("specialists")));
    assertThat(m.bindings())
        .extracting(ResolvedBinding::route, ResolvedBinding::wireName, ResolvedBinding::key)
        .containsExactly(
            tuple(Route.NESTED_AGENT, "ask_payments", "./specialists/payments.yaml@default"),
            tuple(Route.WORKER, "process_payment", "payments.process-payment@1.0.0"));
    assertThat(m.agents().get(1).policies())
        .extracting(PolicyDocument::id)
        .containsExactly("fixtures.approval");
  }

  @Test
  void the_runtimes_own_layout_routes_a_pinned_ref_to_its_tool_documents_version()
      throws IOException {
    // e2e/scenarios/00-baseline-hitl in the runtime's repository: ref @1.0.0, tools/ beside it
    write(
        "tools/payments.process-payment.yaml",
        tool("payments.process-payment", "1.0.0", "non_idempotent_write"));
    Path a =
        write(
            "agent.yaml", agent("- ref: payments.process-payment@1.0.0\n  as: process_payment\n"));

    ResolvedBinding b = only(Contracts.load(a));

    assertThat(b.key()).isEqualTo("payments.process-payment@1.0.0");
    assertThat(b.problems()).isEmpty();
  }

  @Test
  void a_constraint_is_a_lower_bound_and_a_caret_keeps_the_major_version() throws IOException {
    write("tools/t.a.yaml", tool("t.a", "1.4.2", "read_only"));
    Map<String, Boolean> cases =
        Map.of(
            "1.0.0",
            true,
            "^1.2",
            true,
            "~1.4",
            true,
            ">=1.4.2",
            true,
            "<2", // the runtime drops the operator: at least 2.0.0
            false,
            "^2",
            false,
            "1.5",
            false,
            "^0.9",
            false,
            "v1",
            true,
            "1.4.2-rc.1",
            true);
    for (var c : cases.entrySet()) {
      Path a = write("agent.yaml", agent("- ref: t.a@" + c.getKey() + "\n"));
      ResolvedBinding b = only(Contracts.load(a));
      assertThat(b.hasErrors()).as("@%s against 1.4.2", c.getKey()).isEqualTo(!c.getValue());
      assertThat(b.key()).isEqualTo("t.a@1.4.2");
    }
  }

  @Test
  void the_binding_keeps_what_it_sets_and_a_version_on_it_is_a_warning() throws IOException {
    write("tools/t.a.yaml", tool("t.a", "1.0.0", "read_only"));
    Path a =
        write(
            "agent.yaml",
            agent("- ref: t.a\n  version: \"1.10\"\n  side_effect_class: idempotent_write\n"));

    ResolvedBinding b = only(Contracts.load(a));

    assertThat(b.key()).isEqualTo("t.a@1.10"); // as written, not the number 1.1
    assertThat(b.sideEffectClass()).contains("idempotent_write");
    assertThat(b.problems())
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.isError()).isFalse();
              assertThat(p.where()).isEqualTo("spec.tools[0].version");
              assertThat(p.fix()).contains("t.a@1.10");
            });
  }

  @Test
  void refs_that_are_not_namespace_name_keep_their_at_and_look_nothing_up() throws IOException {
    Path a =
        write(
            "agent.yaml",
            agent("- ref: echo@^1\n- ref: \" payments.process-payment \"\n- ref: notes.add@\n"));

    assertThat(Contracts.load(a).bindings())
        .extracting(ResolvedBinding::key, ResolvedBinding::wireName)
        .containsExactly(
            tuple("echo@^1@default", "echo__1"),
            tuple("payments.process-payment@default", "payments_process-payment"),
            tuple("notes.add@default", "notes_add_"));
  }

  @Test
  void duplicate_refs_and_wire_names_are_refused() throws IOException {
    Path a =
        write(
            "agent.yaml",
            agent(
                "- ref: a.b\n  as: x\n- ref: a.b\n  as: y\n- ref: c.d\n  as: x\n- ref: e.f\n  as: no good\n"));

    assertThat(Contracts.load(a).bindings())
        .extracting(b -> b.problems().stream().map(Problem::message).toList())
        .containsExactly(
            List.of(),
            List.of("must be unique (spec.tools[0] has the same ref a.b)"),
            List.of("resolves to the wire name x of spec.tools[0] as well"),
            List.of("the wire name no good must match [a-zA-Z0-9_-]{1,64}"));
  }

  @Test
  void a_worker_binding_with_the_tool_of_an_mcp_or_agent_binding_goes_where_that_one_goes()
      throws IOException {
    Path a =
        write(
            "agent.yaml",
            agent(
                """
                - ref: search.web
                  mcp: {server: search}
                - ref: search.web@^2
                - ref: demo.billing
                - ref: billing-agent
                  agent: {namespace: demo, name: billing}
                - ref: notes.add
                  mcp:
                """));

    List<ResolvedBinding> b = Contracts.load(a).bindings();
    assertThat(b)
        .extracting(ResolvedBinding::route)
        .containsExactly(
            Route.MCP, Route.MCP, Route.NESTED_AGENT, Route.NESTED_AGENT, Route.WORKER);
    assertThat(b.get(1).target())
        .isEqualTo("MCP server search (spec.tools[0] binds the same tool search.web)");
    assertThat(b.get(2).target())
        .isEqualTo("nested agent demo.billing (spec.tools[3] binds the same tool demo.billing)");
  }

  @Test
  void the_catalogs_files_the_runtime_would_refuse_are_problems_of_the_bundle() throws IOException {
    write("tools/a.yaml", tool("t.a", "1.0.0", "read_only"));
    write("tools/b.yml", tool("t.a", "2.0.0", "read_only"));
    write("tools/policy.yaml", "apiVersion: phrony.com/v1\nkind: Policy\n");
    write("tools/old.yaml", "apiVersion: phrony.dev/v1\nkind: Tool\n");
    write("tools/broken.yaml", "kind: Tool\nmetadata: [\n");
    write("tools/README.md", "not yaml, not read");
    Path a = write("agent.yaml", agent("- ref: t.a@1.0.0\n"));

    LoadedManifest m = Contracts.load(a);

    assertThat(m.allProblems())
        .extracting(p -> p.file().getFileName().toString(), Problem::line, Problem::isError)
        .containsExactly(
            tuple("b.yml", 1, true),
            tuple("broken.yaml", 3, true),
            tuple("old.yaml", 1, true),
            tuple("policy.yaml", 2, true));
    assertThat(m.allProblems().getFirst().message()).startsWith("duplicate tool t.a (also ");
    assertThat(only(m).key()).isEqualTo("t.a@1.0.0");
  }

  @Test
  void schema_files_are_found_as_the_runtime_finds_them_and_a_missing_one_is_refused()
      throws IOException {
    write("schemas/in/2.json", "{\"type\": \"object\"}");
    Path a =
        write(
            "agent.yaml",
            agent(
                """
                - ref: a.b
                  input_schema: {ref: schemas/in, version: 2}
                - ref: c.d
                  input_schema: {ref: schemas/nothing}
                """));

    List<ResolvedBinding> b = Contracts.load(a).bindings();
    assertThat(b.get(0).inputSchemaFrom()).contains(tmp.resolve("schemas/in/2.json"));
    assertThat(b.get(1).problems())
        .singleElement()
        .satisfies(
            p ->
                assertThat(p.message())
                    .contains("ref schemas/nothing not found")
                    .contains("schemas/nothing.json"));
  }

  @Test
  void policies_the_bundle_does_not_have_are_refused() throws IOException {
    Path a =
        write(
            "agent.yaml",
            """
            apiVersion: phrony.com/v1
            kind: Agent
            metadata: {name: a, namespace: demo, version: 1.0.0}
            spec:
              default_policies: [demo.nowhere]
              tools:
                - ref: a.b
                  policies:
                    - ref: policies/missing
            """);

    LoadedManifest m = Contracts.load(a);
    assertThat(m.allProblems())
        .extracting(Problem::line, Problem::where)
        .containsExactly(tuple(5, "spec.default_policies"), tuple(9, "spec.tools[0].policies"));
  }

  @Test
  void the_agents_own_refusals_are_named() throws IOException {
    Path a =
        write(
            "agent.yaml",
            """
            apiVersion: phrony.com/v1
            kind: Agent
            metadata: {name: a, namespace: demo, version: not-a-version}
            spec:
              policies:
                - name: inline
            """);

    assertThat(Contracts.load(a).allProblems())
        .extracting(Problem::where)
        .containsExactly("metadata.version", "spec.policies");
  }

  @Test
  void only_the_first_document_is_read_and_later_ones_are_a_warning() throws IOException {
    Path a =
        write("agent.yaml", agent("- ref: a.b\n") + "---\n" + tool("a.b", "1.0.0", "read_only"));

    LoadedManifest m = Contracts.load(a);
    assertThat(only(m).key()).isEqualTo("a.b@default");
    assertThat(m.problems())
        .singleElement()
        .satisfies(
            p ->
                assertThat(p.message())
                    .startsWith("has 2 YAML documents; the runtime reads only the first"));
  }

  @Test
  void a_file_that_is_not_an_agent_or_a_bundle_is_a_usage_error_naming_it() throws IOException {
    Path tool = write("tool.yaml", tool("a.b", "1.0.0", "read_only"));
    assertThatThrownBy(() -> Contracts.load(tool))
        .isInstanceOf(ManifestException.class)
        .hasMessageContaining("its first document is kind: Tool")
        .hasMessageContaining("new-plugin --from-tool");

    Path broken = write("broken.yaml", "kind: Agent\nspec:\n  tools: [\n");
    assertThatThrownBy(() -> Contracts.load(broken))
        .isInstanceOfSatisfying(ManifestException.class, e -> assertThat(e.line()).hasValue(4))
        .hasMessageStartingWith("manifest " + broken + ": YAML syntax error");

    Path noRef = write("noref.yaml", agent("- as: x\n"));
    assertThatThrownBy(() -> Contracts.load(noRef))
        .isInstanceOfSatisfying(ManifestException.class, e -> assertThat(e.line()).hasValue(6))
        .hasMessageContaining("spec.tools[0].ref is missing");

    assertThatThrownBy(() -> Contracts.load(tmp.resolve("nothing.yaml")))
        .isInstanceOf(ManifestException.class)
        .hasMessageContaining("does not exist");
  }

  @Test
  void a_bundle_member_that_cannot_be_read_is_a_problem_naming_who_names_it() throws IOException {
    write(
        "bundle.yaml",
        "apiVersion: phrony.com/v1\nkind: Bundle\nmetadata: {name: b, namespace: demo}\nspec: {root: ./root.yaml}\n");
    write(
        "root.yaml",
        """
        apiVersion: phrony.com/v1
        kind: Agent
        metadata: {name: root, namespace: demo, version: 1.0.0}
        spec:
          agents:
            - ref: ./gone.yaml
            - ref: demo.elsewhere@1.0.0
        """);

    LoadedManifest m = Contracts.load(tmp.resolve("bundle.yaml"));
    assertThat(m.agents()).hasSize(1);
    assertThat(m.bindings()).extracting(ResolvedBinding::route).containsOnly(Route.NESTED_AGENT);
    assertThat(m.problems())
        .singleElement()
        .satisfies(
            p ->
                assertThat(p.message())
                    .contains("does not exist (named by " + tmp.resolve("root.yaml") + ":6)"));
  }

  @Test
  void yaml_scalars_keep_their_types_in_an_inline_schema() throws IOException {
    Path a =
        write(
            "agent.yaml",
            agent(
                """
                - ref: a.b
                  input_schema:
                    inline:
                      type: object
                      additionalProperties: false
                      properties:
                        n: {type: integer, minimum: 0, maximum: 1.5e3, default: "7"}
                """));

    assertThat(only(Contracts.load(a)).inputSchema().map(Object::toString))
        .contains(
            "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"n\":"
                + "{\"type\":\"integer\",\"minimum\":0,\"maximum\":1.5E+3,\"default\":\"7\"}}}");
    assertThat(Optional.of(1)).isPresent();
  }
}
