package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs the assembled distribution's {@code bin/phrony-worker list-handlers} as a process. */
class ListHandlersIT {
  private static final Duration DEADLINE = Duration.ofSeconds(60);

  @TempDir
  Path tmp;

  record Result(int exit, String out, String err) {}

  private Result run(String... args) throws IOException, InterruptedException {
    Path dist = Path.of(System.getProperty("phrony.dist.dir"));
    List<String> command = new ArrayList<>(List.of(dist.resolve("bin/phrony-worker").toString()));
    command.addAll(List.of(args));
    Path out = tmp.resolve("stdout");
    Path err = tmp.resolve("stderr");
    ProcessBuilder pb = new ProcessBuilder(command)
        .directory(tmp.toFile()) // so that a stray ./plugins cannot be picked up
        .redirectOutput(out.toFile())
        .redirectError(err.toFile());
    pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
    pb.environment().remove("PHRONY_WORKER_JAVA_OPTS");
    Process process = pb.start();
    if (!process.waitFor(DEADLINE.toMillis(), TimeUnit.MILLISECONDS)) {
      process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      throw new AssertionError(command + " did not finish within " + DEADLINE + "; stderr:\n"
          + Files.readString(err));
    }
    return new Result(process.exitValue(), Files.readString(out), Files.readString(err));
  }

  @Test
  void lists_the_bundled_handlers_as_json() throws Exception {
    Result r = run("list-handlers", "--format", "json");

    assertThat(r.exit()).as("exit status; stderr:%n%s", r.err()).isZero();
    JsonNode json = new ObjectMapper().readTree(r.out());
    Map<String, String> sideEffects = new TreeMap<>();
    json.get("handlers").forEach(h ->
        sideEffects.put(h.get("key").asText(), h.get("side_effect_class").asText()));
    assertThat(sideEffects).containsExactlyInAnyOrderEntriesOf(Map.of(
        "weather.get-forecast@1.0.0", "read_only",
        "payments.process-payment@1.0.0", "non_idempotent_write",
        "echo@default", "read_only"));
    Path plugins = Path.of(System.getProperty("phrony.dist.dir")).resolve("plugins");
    json.get("handlers").forEach(h -> {
      assertThat(Path.of(h.get("plugin").asText())).startsWith(plugins);
      assertThat(h.get("descriptor_hash").asText()).matches("sha256:[0-9a-f]{64}");
    });
    assertThat(json.get("problems").size()).isZero();
    assertThat(json.get("image_digest").asText()).matches("sha256:[0-9a-f]{64}");
  }

  @Test
  void missing_plugins_dir_exits_1_with_one_line_on_stderr() throws Exception {
    Result r = run("list-handlers", "--plugins", "no-such-plugins");

    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.out()).isEmpty();
    assertThat(r.err().lines().toList()).singleElement().asString()
        .startsWith("phrony-worker list-handlers: plugins directory no-such-plugins (")
        .contains("does not exist");
  }
}
