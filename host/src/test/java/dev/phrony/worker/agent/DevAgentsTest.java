package dev.phrony.worker.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.phrony.worker.contract.Fixtures;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link DevAgents}: agents in the runtime's layout loaded for {@code dev --agent}, their policies
 * evaluated as the runtime's {@code internal/policy} does, and what dev cannot run refused at load,
 * naming the file and the field.
 */
class DevAgentsTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  static Path scenario(String name) {
    return Fixtures.dir().resolveSibling("scenarios").resolve(name);
  }

  @Test
  void a_scenario_folder_loads_its_bindings_script_and_policies() {
    DevAgent a =
        DevAgents.load(List.of(scenario("02-approval-threshold")))
            .find("demo", "payment-agent-hitl", "")
            .orElseThrow();

    assertThat(a.ref()).isEqualTo("demo/payment-agent-hitl@1.0.0");
    assertThat(UUID.fromString(a.agentVersionId()).version()).isEqualTo(3);
    assertThat(a.binding("process_payment").orElseThrow().key())
        .isEqualTo("payments.process-payment@1.0.0");
    assertThat(a.binding("process_payment").orElseThrow().sideEffectClass())
        .isEqualTo("non_idempotent_write");
    assertThat(a.script().turns()).hasSize(4);
    assertThat(a.script().turns().getFirst())
        .containsExactly(
            new StubScript.ToolCall(
                "process_payment", "{\"amount\":200,\"currency\":\"USD\",\"payee\":\"Small Co\"}"),
            new StubScript.Completed("tool_use"));
    assertThat(a.policies().evaluate("payments.process-payment", args("{\"amount\":1500}")))
        .isInstanceOf(Policies.RequireApproval.class);
    assertThat(a.policies().evaluate("payments.process-payment", args("{\"amount\":1000}")))
        .isInstanceOf(Policies.Allow.class);
    assertThat(a.policies().evaluate("other.tool", args("{\"amount\":5000}")))
        .isInstanceOf(Policies.Allow.class);
    assertThat(
            DevAgents.load(List.of(scenario("02-approval-threshold")))
                .find("demo", "payment-agent-hitl", "2.0.0"))
        .isEmpty();
  }

  @Test
  void conditions_evaluate_as_the_runtimes_condition_tree() {
    Condition c =
        Condition.parse(
            args(
                "{\"all\":[{\"field\":\"amount\",\"op\":\">=\",\"value\":\"100\"},"
                    + "{\"any\":[{\"field\":\"payee.country\",\"value\":\"no\"},"
                    + "{\"field\":\"currency\",\"op\":\"in\",\"value\":[\"EUR\",\"NOK\"]}]},"
                    + "{\"not\":{\"field\":\"memo\",\"op\":\"matches\",\"value\":\"^test\"}}]}"),
            "here");

    assertThat(c.matches(args("{\"amount\":100,\"payee\":{\"country\":\"NO\"}}"))).isTrue();
    assertThat(c.matches(args("{\"amount\":\"250\",\"currency\":\"eur\"}"))).isTrue();
    assertThat(c.matches(args("{\"amount\":250,\"currency\":\"USD\"}"))).isFalse();
    assertThat(c.matches(args("{\"amount\":99,\"currency\":\"EUR\"}"))).isFalse();
    assertThat(c.matches(args("{\"currency\":\"EUR\"}"))).as("a missing field").isFalse();
    assertThat(c.matches(args("{\"amount\":500,\"currency\":\"EUR\",\"memo\":\"test run\"}")))
        .isFalse();
  }

  @Test
  void an_unknown_operator_is_refused_naming_the_file_and_the_field() throws IOException {
    Path agent = copy("02-approval-threshold");
    Path policy = agent.resolve("policies/payment-require-approval.yaml");
    Files.writeString(policy, Files.readString(policy).replace("op: gt", "op: above"));

    assertThatThrownBy(() -> DevAgents.load(List.of(agent)))
        .isInstanceOf(AgentLoadException.class)
        .hasMessageContaining(policy + ":")
        .hasMessageContaining("spec.conditions.op: unknown operator \"above\"")
        .hasMessageContaining("gt, >, gte");
  }

  @Test
  void a_decision_dev_does_not_evaluate_is_refused_at_load() throws IOException {
    Path agent = copy("02-approval-threshold");
    Path policy = agent.resolve("policies/payment-require-approval.yaml");
    Files.writeString(
        policy,
        Files.readString(policy)
            .replace(
                "    type: require_approval",
                "    type: require_approval\n    timeout:\n" + "      after_minutes: 5"));
    assertThatThrownBy(() -> DevAgents.load(List.of(agent)))
        .isInstanceOf(AgentLoadException.class)
        .hasMessageContaining(policy + ":")
        .hasMessageContaining("spec.decision.timeout: not evaluated by dev");

    Files.writeString(policy, Files.readString(policy).replace("require_approval", "audit"));
    assertThatThrownBy(() -> DevAgents.load(List.of(agent)))
        .hasMessageContaining("spec.decision.type: \"audit\" is not evaluated by dev");
  }

  @Test
  void a_dispatch_trigger_condition_is_refused_at_load() throws IOException {
    Path agent = copy("02-approval-threshold");
    Path policy = agent.resolve("policies/payment-require-approval.yaml");
    Files.writeString(
        policy,
        Files.readString(policy).replace("field: amount", "field: phrony.dispatch.trigger"));
    assertThatThrownBy(() -> DevAgents.load(List.of(agent)))
        .hasMessageContaining("spec.conditions.field: phrony.dispatch.trigger conditions escalate");
  }

  @Test
  void another_model_provider_or_a_missing_script_is_refused() throws IOException {
    Path agent = copy("01-auto-dispatch");
    Files.delete(agent.resolve("stub-script.json"));
    assertThatThrownBy(() -> DevAgents.load(List.of(agent)))
        .hasMessageContaining(agent.resolve("stub-script.json") + ": not found");

    Path file = agent.resolve("agent.yaml");
    Files.writeString(file, Files.readString(file).replace("provider: stub", "provider: openai"));
    assertThatThrownBy(() -> DevAgents.load(List.of(agent)))
        .hasMessageContaining(file + ":")
        .hasMessageContaining("spec.model.provider: openai: dev runs only the runtime's scripted");
  }

  @Test
  void a_script_event_of_another_type_is_refused() throws IOException {
    Path agent = copy("01-auto-dispatch");
    Files.writeString(
        agent.resolve("stub-script.json"), "{\"turns\": [[{\"type\": \"thinking\"}]]}");
    assertThatThrownBy(() -> DevAgents.load(List.of(agent)))
        .hasMessageContaining("turns[0][0].type: unsupported type \"thinking\"");
    Files.writeString(agent.resolve("stub-script.json"), "{\"turns\": []}");
    assertThatThrownBy(() -> DevAgents.load(List.of(agent)))
        .hasMessageContaining("the stub script must contain at least one turn");
  }

  @Test
  void a_path_with_no_manifest_says_what_to_give() {
    assertThatThrownBy(() -> DevAgents.load(List.of(dir)))
        .hasMessage(
            "--agent " + dir + ": has neither agent.yaml nor bundle.yaml: name the manifest file");
  }

  private Path copy(String scenario) throws IOException {
    Path from = scenario(scenario);
    Path to = dir.resolve(scenario);
    try (var files = Files.walk(from)) {
      for (Path p : files.toList()) {
        Path target = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else {
          Files.copy(p, target);
        }
      }
    }
    return to;
  }

  private static JsonNode args(String json) {
    try {
      return JSON.readTree(json);
    } catch (IOException e) {
      throw new IllegalArgumentException(e);
    }
  }
}
