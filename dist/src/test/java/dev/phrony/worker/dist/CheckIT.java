package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.phrony.worker.manifest.Samples;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the assembled distribution's {@code bin/phrony-worker check} against its bundled plugins.
 */
class CheckIT {
  @TempDir Path tmp;

  @Test
  void the_weather_agent_is_served_by_the_bundled_plugins() throws Exception {
    DistProcess.Result r =
        DistProcess.run(
            tmp, "check", "--manifest", Samples.weather().toString(), "--format", "json");

    assertThat(r.exit()).as("exit status; stderr:%n%s", r.err()).isZero();
    JsonNode json = new ObjectMapper().readTree(r.out());
    assertThat(json.get("ok").asBoolean()).isTrue();
    Path plugins = DistProcess.distDir().resolve("plugins");
    assertThat(json.get("bindings"))
        .allSatisfy(
            b -> {
              assertThat(b.get("status").asText()).isEqualTo("served");
              assertThat(Path.of(b.get("plugin").asText())).startsWith(plugins);
            });
  }

  @Test
  void the_mismatch_agent_exits_3() throws Exception {
    DistProcess.Result r =
        DistProcess.run(
            tmp, "check", "--manifest", Samples.mismatch().toString(), "--format", "json");

    assertThat(r.exit()).as("exit status; stderr:%n%s", r.err()).isEqualTo(3);
    JsonNode json = new ObjectMapper().readTree(r.out());
    assertThat(json.get("ok").asBoolean()).isFalse();
    Map<String, String> statuses = new TreeMap<>();
    json.get("bindings")
        .forEach(b -> statuses.put(b.get("ref").asText(), b.get("status").asText()));
    assertThat(statuses)
        .containsExactlyInAnyOrderEntriesOf(
            Map.of(
                "weather.get-forecast", "missing",
                "payments.process-payment", "class_mismatch",
                "search.web@^1.2", "skipped",
                "crm.lookup-account", "missing"));
  }

  @Test
  void a_malformed_manifest_exits_1_naming_the_line() throws Exception {
    Path manifest =
        Files.writeString(tmp.resolve("agent.yaml"), "kind: Agent\nspec:\n  tools: [\n");

    DistProcess.Result r = DistProcess.run(tmp, "check", "--manifest", manifest.toString());

    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.out()).isEmpty();
    assertThat(r.err().lines().toList())
        .singleElement()
        .asString()
        .startsWith("phrony-worker check: manifest " + manifest + ": YAML syntax error at line ");
  }
}
