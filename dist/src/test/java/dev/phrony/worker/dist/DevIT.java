package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bin/phrony-worker dev} and {@code bin/phrony-worker call} as child processes, as a
 * newcomer uses them: dev in one terminal, calls from another, Ctrl-C to stop.
 */
class DevIT {
  @TempDir Path tmp;

  @Test
  void dev_serves_the_bundled_plugins_to_call_and_stops_cleanly_on_sigint() throws Exception {
    int port = DistProcess.freePort();
    int controlPort = DistProcess.freePort();
    String control = "http://127.0.0.1:" + controlPort;
    String runtime = "127.0.0.1:" + port;
    try (DistProcess dev =
        DistProcess.start(
            tmp,
            Map.of(),
            "dev",
            "--port",
            String.valueOf(port),
            "--control-port",
            String.valueOf(controlPort))) {
      dev.awaitStdout("Ctrl-C stops.", DistProcess.DEADLINE);
      assertThat(dev.stdout())
          .contains("runtime  127.0.0.1:" + port)
          .contains("control  " + control)
          .contains("weather.get-forecast@1.0.0")
          .contains("payments.process-payment@1.0.0")
          .contains("echo@default")
          .contains(
              "  bin/phrony-worker call weather.get-forecast@1.0.0 '{\"city\":\"Oslo\"}'"
                  + " --runtime "
                  + runtime
                  + "\n");

      // The banner's call, as typed (the shell removes the single quotes).
      DistProcess.Result forecast =
          DistProcess.run(
              tmp,
              "call",
              "weather.get-forecast@1.0.0",
              "{\"city\":\"Oslo\"}",
              "--runtime",
              runtime);
      assertThat(forecast.exit()).as("stderr: %s", forecast.err()).isZero();
      assertThat(forecast.out()).startsWith("{\n  \"city\": \"Oslo\",\n  \"days\": [\n");
      JsonNode json = new ObjectMapper().readTree(forecast.out());
      assertThat(json.path("days").size()).isEqualTo(3);

      DistProcess.Result noCity =
          DistProcess.run(
              tmp,
              Map.of("PHRONY_RUNTIME_ADDR", runtime),
              "call",
              "weather.get-forecast@1.0.0",
              "{}");
      assertThat(noCity.exit()).as("stderr: %s", noCity.err()).isEqualTo(4);
      assertThat(noCity.out()).isEmpty();
      assertThat(noCity.err())
          .isEqualTo(
              "invalid_args: arguments do not fit the input schema: /city: required, but missing\n");

      DistProcess.Result unknown =
          DistProcess.run(
              tmp,
              "call",
              "no.such-tool@1.0.0",
              "--runtime",
              runtime); // answered at once: nobody serves it
      assertThat(unknown.exit()).as("stderr: %s", unknown.err()).isEqualTo(5);
      assertThat(unknown.err())
          .startsWith("no_handler: ")
          .contains("hint: no worker serves no.such-tool@1.0.0; served: echo@default");

      DistProcess.Result remote = DistProcess.run(tmp, "list-handlers", "--worker", control);
      assertThat(remote.exit()).as("stderr: %s", remote.err()).isZero();
      assertThat(remote.out()).containsPattern("(?m)^generation 1, loaded at \\S+$");
      assertThat(remote.out().replaceAll("(?m)^generation .*\n", ""))
          .as("what dev's worker serves, in the columns of the local table")
          .isEqualTo(DistProcess.run(tmp, "list-handlers").out());

      DistProcess.Result second =
          DistProcess.run(
              tmp,
              "dev",
              "--port",
              String.valueOf(port),
              "--control-port",
              String.valueOf(DistProcess.freePort()));
      assertThat(second.exit()).isEqualTo(1);
      assertThat(second.err())
          .isEqualTo(
              "phrony-worker dev: the runtime's port "
                  + port
                  + " is in use (another 'phrony-worker dev'?): stop what uses it, or choose another "
                  + "port with --port PORT\n");

      dev.awaitStdout("kind=no_handler", Duration.ofSeconds(10));
      assertThat(dev.stdout())
          .containsPattern("tool_call   call_id=\\S+ tool=weather.get-forecast@1.0.0 args=15B")
          .containsPattern(
              "tool_result call_id=\\S+ outcome=result size=\\d+B worker=\\S+ " + "elapsed=\\d+ms")
          .containsPattern("tool_result call_id=\\S+ outcome=tool_error code=invalid_args ")
          .containsPattern("tool_result call_id=\\S+ outcome=dispatch_error kind=no_handler ");

      dev.interrupt();
      DistProcess.Result stopped = dev.awaitExit(DistProcess.DEADLINE);
      assertThat(stopped.exit()).as("exit status; stderr:%n%s", stopped.err()).isZero();
      assertThat(stopped.err())
          .contains("SIGINT received")
          .contains("dev stopped")
          .doesNotContain("Exception")
          .doesNotContain("\tat ");
    }

    DistProcess.Result nobody = DistProcess.run(tmp, "call", "echo", "--runtime", runtime);
    assertThat(nobody.exit()).isEqualTo(6);
    assertThat(nobody.out()).isEmpty();
    assertThat(nobody.err().lines().toList())
        .singleElement()
        .asString()
        .startsWith("phrony-worker call: no runtime answers at " + runtime)
        .contains("start one with 'phrony-worker dev'");
  }
}
