package dev.phrony.worker.manifest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.worker.manifest.Binding.Route;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ManifestReaderTest {
  @TempDir Path tmp;

  private Path write(String yaml) throws IOException {
    return Files.writeString(Files.createTempFile(tmp, "agent", ".yaml"), yaml);
  }

  private static List<Binding> read(Path file) {
    return new ManifestReader().read(file);
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

  @Test
  void reads_the_weather_sample() {
    List<Binding> bindings = read(Samples.weather());

    assertThat(bindings)
        .extracting(Binding::key)
        .containsExactly(
            "weather.get-forecast@1.0.0", "payments.process-payment@1.0.0", "echo@default");
    assertThat(bindings)
        .extracting(b -> b.sideEffectClass().orElseThrow())
        .containsExactly("read_only", "non_idempotent_write", "read_only");
    assertThat(bindings).extracting(Binding::route).containsOnly(Route.WORKER);
    assertThat(bindings).extracting(Binding::document).containsOnly(1);
    assertThat(bindings)
        .extracting(Binding::path)
        .containsExactly("spec.tools[0]", "spec.tools[1]", "spec.tools[2]");
    assertThat(bindings).extracting(Binding::line).containsExactly(13, 16, 19);
    assertThat(bindings.get(2).version()).isEmpty();
  }

  @Test
  void an_mcp_binding_is_not_routed_to_workers() {
    List<Binding> bindings = read(Samples.mismatch());

    assertThat(bindings)
        .extracting(Binding::ref)
        .containsExactly(
            "weather.get-forecast",
            "payments.process-payment",
            "search.web@^1.2",
            "crm.lookup-account");
    Binding search = bindings.get(2);
    assertThat(search.route()).isEqualTo(Route.MCP);
    assertThat(search.target()).isEqualTo("MCP server search");
    assertThat(search.tool()).isEqualTo("search.web");
    assertThat(search.constraint()).contains("^1.2");
    assertThat(bindings.get(3).key()).isEqualTo("crm.lookup-account@default");
  }

  @Test
  void the_key_is_the_ref_without_its_constraint_then_the_version_or_default() throws IOException {
    List<Binding> bindings =
        read(
            write(
                agent(
                    """
        - ref: weather.get-forecast@^1.0
          version: "1.0.0"
        - ref: " payments.process-payment @ >=1.2 "
        - ref: echo@^1
        - ref: search.web@
          version: 1.10
        - ref: crm.lookup-account
          version: ~
        - ref: notes.add
          version: ""
        """)));

    assertThat(bindings)
        .extracting(Binding::key)
        .containsExactly(
            "weather.get-forecast@1.0.0",
            "payments.process-payment@default",
            // not namespace.name: the runtime does not strip the constraint (nor can a handler
            // advertise a tool with '@', so this is never served)
            "echo@^1@default",
            "search.web@1.10", // as written, not the number 1.1
            "crm.lookup-account@default",
            "notes.add@default");
    assertThat(bindings)
        .extracting(Binding::constraint)
        .containsExactly(
            Optional.of("^1.0"),
            Optional.of(">=1.2"),
            Optional.empty(),
            Optional.empty(),
            Optional.empty(),
            Optional.empty());
    assertThat(bindings.get(1).ref()).isEqualTo("payments.process-payment @ >=1.2");
  }

  @Test
  void reads_every_agent_document_and_passes_over_other_kinds_and_empty_ones() throws IOException {
    Path file =
        write(
            """
        apiVersion: phrony.com/v1
        kind: Policy
        metadata: {name: p}
        spec:
          tools:
            - ref: not.a-binding
        ---
        """
                + agent("- ref: weather.get-forecast\n  version: 1.0.0\n")
                + """
        ---
        ---
        """
                + agent("- ref: echo\n- ref: payments.process-payment\n  version: 1.0.0\n"));

    List<Binding> bindings = read(file);

    assertThat(bindings)
        .extracting(Binding::document, Binding::key)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple(2, "weather.get-forecast@1.0.0"),
            org.assertj.core.groups.Tuple.tuple(4, "echo@default"),
            org.assertj.core.groups.Tuple.tuple(4, "payments.process-payment@1.0.0"));
    assertThat(bindings.get(1).line()).isEqualTo(22);
  }

  @Test
  void nested_agents_are_not_routed_to_workers() throws IOException {
    Path file =
        write(
            agent(
                    """
        - ref: billing
          agent: {namespace: demo, name: billing, version: 1.0.0}
        - ref: crm.lookup-account
          agent: {}
        """)
                + """
          agents:
            - ref: ./specialists/triage.yaml
        """);

    List<Binding> bindings = read(file);

    assertThat(bindings).extracting(Binding::route).containsOnly(Route.NESTED_AGENT);
    assertThat(bindings)
        .extracting(Binding::target)
        .containsExactly(
            "nested agent demo.billing",
            "a nested agent",
            "nested agent ./specialists/triage.yaml");
    assertThat(bindings.get(2).path()).isEqualTo("spec.agents[0]");
  }

  @Test
  void a_worker_binding_with_the_tool_of_an_mcp_or_agent_binding_goes_where_that_one_goes()
      throws IOException {
    List<Binding> bindings =
        read(
            write(
                agent(
                    """
        - ref: search.web
          mcp: {server: search}
        - ref: search.web@^2
          version: 2.0.0
        - ref: demo.billing
        - ref: billing-agent
          agent: {namespace: demo, name: billing}
        - ref: echo
          mcp: null
        - ref: notes.add
          mcp:
        """)));

    assertThat(bindings)
        .extracting(Binding::route)
        .containsExactly(
            Route.MCP,
            Route.MCP,
            Route.NESTED_AGENT,
            Route.NESTED_AGENT,
            Route.WORKER,
            Route.WORKER);
    assertThat(bindings.get(1).target())
        .isEqualTo("MCP server search (spec.tools[0] binds the same tool search.web)");
    assertThat(bindings.get(2).target())
        .isEqualTo("nested agent demo.billing (spec.tools[3] binds the same tool demo.billing)");
  }

  @Test
  void an_agent_without_tools_has_no_bindings() throws IOException {
    assertThat(read(write("kind: Agent\nspec:\n  purpose: nothing\n"))).isEmpty();
    assertThat(read(write("kind: Agent\n"))).isEmpty();
  }

  @Test
  void malformed_yaml_names_the_file_and_the_line() throws IOException {
    Path file =
        write(
            agent(
                """
        - ref: weather.get-forecast
          version: "1.0.0
        """));

    assertThatThrownBy(() -> read(file))
        .isInstanceOfSatisfying(
            ManifestException.class,
            e -> {
              assertThat(e.file()).isEqualTo(file);
              assertThat(e.line()).hasValue(8);
            })
        .hasMessageStartingWith("manifest " + file + ": YAML syntax error at line 8, column 1: ")
        .hasMessageContaining("while scanning a quoted scalar at line 7, column 16")
        .message()
        .doesNotContain("\n");

    Path colon = write("kind: Agent\nspec: tools: []\n");
    assertThatThrownBy(() -> read(colon))
        .hasMessage(
            "manifest "
                + colon
                + ": YAML syntax error at line 2, column 12: mapping values are not allowed here");
  }

  @Test
  void a_binding_without_ref_is_refused_with_its_path_and_line() throws IOException {
    Path file =
        write(
            agent(
                """
        - ref: weather.get-forecast
        - ref: echo
        - version: 1.0.0
          side_effect_class: read_only
        """));

    assertThatThrownBy(() -> read(file))
        .isInstanceOfSatisfying(ManifestException.class, e -> assertThat(e.line()).hasValue(8))
        .hasMessage(
            "manifest "
                + file
                + ": spec.tools[2].ref is missing at line 8: give every "
                + "binding a ref (the tool name, e.g. weather.get-forecast)");

    Path empty = write(agent("- ref: \"\"\n"));
    assertThatThrownBy(() -> read(empty))
        .hasMessageContaining("spec.tools[0].ref is missing at line 6");
    Path list = write(agent("- ref: [a, b]\n"));
    assertThatThrownBy(() -> read(list))
        .hasMessageContaining(
            "spec.tools[0].ref is not a single value at line 6: write it as a string");
  }

  @Test
  void shapes_it_cannot_read_are_refused_with_the_line() throws IOException {
    Path notList = write("kind: Agent\nspec:\n  tools:\n    ref: echo\n");
    assertThatThrownBy(() -> read(notList))
        .hasMessageContaining("spec.tools is not a list at line 4");

    Path notMapping = write(agent("- echo\n"));
    assertThatThrownBy(() -> read(notMapping))
        .hasMessageContaining("spec.tools[0] is not a mapping at line 6");

    Path mcpScalar = write(agent("- ref: search.web\n  mcp: search\n"));
    assertThatThrownBy(() -> read(mcpScalar))
        .hasMessageContaining("spec.tools[0].mcp is not a mapping at line 7");

    Path docList = write("kind: Agent\n---\n- a\n- b\n");
    assertThatThrownBy(() -> read(docList))
        .hasMessageContaining("document 2 is not a mapping at line 3");

    Path noKind = write("kind: Agent\n---\napiVersion: phrony.com/v1\nspec: {}\n");
    assertThatThrownBy(() -> read(noKind))
        .hasMessageContaining("document 2 has no kind at line 3: set kind: Agent");

    Path twice = write(agent("- ref: echo\n  version: 1.0.0\n  version: 2.0.0\n"));
    assertThatThrownBy(() -> read(twice))
        .hasMessageContaining(
            "YAML syntax error at line 8, column 7: mapping key 'version' already defined at "
                + "line 7");

    Path alias = write(agent("- ref: &r echo\n- ref: *r\n"));
    assertThatThrownBy(() -> read(alias))
        .hasMessageContaining("YAML syntax error at line 7")
        .hasMessageContaining("YAML aliases (*r) are not supported here");
  }

  @Test
  void a_file_without_an_agent_document_is_refused() throws IOException {
    Path policy = write("kind: Policy\nspec: {}\n");
    assertThatThrownBy(() -> read(policy))
        .isInstanceOf(ManifestException.class)
        .hasMessage(
            "manifest " + policy + " has no kind: Agent document: pass the agent's " + "manifest");
    Path empty = write("");
    assertThatThrownBy(() -> read(empty)).hasMessageContaining("has no kind: Agent document");
  }

  @Test
  void a_missing_or_unreadable_file_is_named() throws IOException {
    Path missing = tmp.resolve("nowhere.yaml");
    assertThatThrownBy(() -> read(missing))
        .isInstanceOfSatisfying(ManifestException.class, e -> assertThat(e.line()).isEmpty())
        .hasMessage(
            "manifest " + missing + " does not exist: check the path given with " + "--manifest");

    Path relative = Path.of("no-such-agent.yaml");
    assertThatThrownBy(() -> read(relative))
        .hasMessage(
            "manifest no-such-agent.yaml ("
                + relative.toAbsolutePath()
                + ") does not exist: check the path given with --manifest");

    assertThatThrownBy(() -> read(tmp))
        .hasMessage("manifest " + tmp + " is a directory: pass " + "the manifest file itself");

    Path latin1 =
        Files.write(
            tmp.resolve("latin1.yaml"),
            "kind: Agent # caf\u00e9\n".getBytes(StandardCharsets.ISO_8859_1));
    assertThatThrownBy(() -> read(latin1))
        .hasMessage("manifest " + latin1 + " is not UTF-8 " + "text: save it as UTF-8");
  }
}
