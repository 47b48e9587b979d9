package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs the assembled distribution's {@code bin/phrony-worker list-handlers} as a process. */
class ListHandlersIT {
  @TempDir Path tmp;

  private DistProcess.Result run(String... args) throws IOException, InterruptedException {
    return DistProcess.run(tmp, args);
  }

  @Test
  void lists_the_bundled_handlers_as_json() throws Exception {
    DistProcess.Result r = run("list-handlers", "--format", "json");

    assertThat(r.exit()).as("exit status; stderr:%n%s", r.err()).isZero();
    JsonNode json = new ObjectMapper().readTree(r.out());
    Map<String, String> sideEffects = new TreeMap<>();
    json.get("handlers")
        .forEach(h -> sideEffects.put(h.get("key").asText(), h.get("side_effect_class").asText()));
    assertThat(sideEffects)
        .containsExactlyInAnyOrderEntriesOf(
            Map.of(
                "weather.get-forecast@1.0.0", "read_only",
                "payments.process-payment@1.0.0", "non_idempotent_write",
                "echo@default", "read_only"));
    Map<String, String> execution = new TreeMap<>();
    json.get("handlers")
        .forEach(h -> execution.put(h.get("key").asText(), h.get("execution").asText()));
    assertThat(execution)
        .as("echo never blocks: it starts on the stream's own thread")
        .containsExactlyInAnyOrderEntriesOf(
            Map.of(
                "weather.get-forecast@1.0.0",
                "thread",
                "payments.process-payment@1.0.0",
                "thread",
                "echo@default",
                "async"));
    Path plugins = Path.of(System.getProperty("phrony.dist.dir")).resolve("plugins");
    json.get("handlers")
        .forEach(
            h -> {
              assertThat(Path.of(h.get("plugin").asText())).startsWith(plugins);
              assertThat(h.get("descriptor_hash").asText()).matches("sha256:[0-9a-f]{64}");
            });
    assertThat(json.get("problems").size()).isZero();
    assertThat(json.get("image_digest").asText()).matches("sha256:[0-9a-f]{64}");
  }

  @Test
  void missing_plugins_dir_exits_1_with_one_line_on_stderr() throws Exception {
    DistProcess.Result r = run("list-handlers", "--plugins", "no-such-plugins");

    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.out()).isEmpty();
    assertThat(r.err().lines().toList())
        .singleElement()
        .asString()
        .startsWith("phrony-worker list-handlers: plugins directory no-such-plugins (")
        .contains("does not exist");
  }
}
