package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.phrony.worker.contract.Fixtures;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Both directions of a contract from the distribution: {@code tool-manifest} publishes each bundled
 * plugin's {@code kind: Tool} document, and {@code check} of an agent bundle that binds them by
 * those documents is clean; the fixture bundles in the runtime's layout come out as the runtime
 * would route them.
 */
class ToolManifestIT {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path tmp;

  @Test
  void the_tool_documents_of_the_bundled_plugins_make_a_bundle_that_checks_clean()
      throws Exception {
    Path tools = Files.createDirectories(tmp.resolve("bundle/tools"));
    for (String key :
        new String[] {"weather.get-forecast@1.0.0", "payments.process-payment@1.0.0"}) {
      DistProcess.Result r = DistProcess.run(tmp, "tool-manifest", key);
      assertThat(r.exit()).as("stderr: %s", r.err()).isZero();
      assertThat(r.out()).startsWith("apiVersion: phrony.com/v1\nkind: Tool\nmetadata:\n");
      Files.writeString(tools.resolve(key.substring(0, key.indexOf('@')) + ".yaml"), r.out());
    }
    DistProcess.Result weather =
        DistProcess.run(tmp, "tool-manifest", "weather.get-forecast@1.0.0");
    assertThat(weather.out())
        .contains("  version: 1.0.0\n")
        .contains("  side_effect_class: read_only\n")
        .contains("      required:\n        - city\n");

    DistProcess.Result echo = DistProcess.run(tmp, "tool-manifest", "echo");
    assertThat(echo.exit()).isEqualTo(1);
    assertThat(echo.err()).contains("echo is not of the form namespace.name");
    DistProcess.Result none = DistProcess.run(tmp, "tool-manifest", "nothing.here@1.0.0");
    assertThat(none.exit()).isEqualTo(1);
    assertThat(none.err())
        .contains("no handler serves nothing.here@1.0.0")
        .contains("echo@default");

    Path agent =
        Files.writeString(
            tmp.resolve("bundle/agent.yaml"),
            """
            apiVersion: phrony.com/v1
            kind: Agent
            metadata: {name: trip, namespace: demo, version: 1.0.0}
            spec:
              purpose: Plans a day out and pays for it.
              instructions: {text: Plan and pay.}
              model: {provider: stub, name: scripted}
              tools:
                - ref: weather.get-forecast@^1.0
                  as: forecast
                - ref: payments.process-payment@1.0.0
                  as: pay
                - ref: echo
                  side_effect_class: read_only
            """);
    DistProcess.Result r =
        DistProcess.run(tmp, "check", "--manifest", agent.toString(), "--format", "json");

    assertThat(r.exit()).as("stdout: %s%nstderr: %s", r.out(), r.err()).isZero();
    JsonNode json = JSON.readTree(r.out());
    assertThat(json.get("problems")).isEmpty();
    assertThat(json.get("bindings"))
        .allSatisfy(
            b -> {
              assertThat(b.get("status").asText()).isEqualTo("served");
              assertThat(b.get("schema")).as("%s", b).isEmpty();
              assertThat(b.get("problems")).as("%s", b).isEmpty();
            });
    assertThat(json.get("bindings"))
        .extracting(b -> b.get("key").asText())
        .containsExactly(
            "weather.get-forecast@1.0.0", "payments.process-payment@1.0.0", "echo@default");
  }

  @Test
  void the_fixture_bundles_are_served_by_the_bundled_plugins() throws Exception {
    for (Path manifest : new Path[] {Fixtures.desk(), Fixtures.bundle()}) {
      DistProcess.Result r = DistProcess.run(tmp, "check", "--manifest", manifest.toString());
      assertThat(r.exit()).as("%s:%n%s%s", manifest, r.out(), r.err()).isZero();
      assertThat(r.out()).contains("payments.process-payment@1.0.0").containsPattern("\nok: ");
    }
    DistProcess.Result drift =
        DistProcess.run(
            tmp, "check", "--manifest", Fixtures.drift().toString(), "--format", "json");
    assertThat(drift.exit()).isEqualTo(3);
    assertThat(JSON.readTree(drift.out()).get("bindings").get(0).get("status").asText())
        .isEqualTo("version_outside_constraint");
  }
}
