package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.phrony.worker.testing.TestCerts;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The distribution operated for real: settings from the environment and a worker.yaml, JSON logs
 * with the call context, TLS with a private CA and a bearer token that never shows up anywhere, the
 * probe endpoints, and a clear error for an HTTP port in use.
 */
class OpsIT {
  private static final String TOKEN = "tok-0d9e7c1b5a2f44";

  @TempDir Path tmp;

  @Test
  void json_logs_with_the_call_context_over_tls_with_a_token_that_is_never_printed()
      throws Exception {
    TestCerts ca = TestCerts.newCa(tmp.resolve("pki"), "runtime-ca");
    TestCerts.Pem server = ca.server("runtime");
    Path tokenFile = Files.writeString(tmp.resolve("token"), TOKEN + "\n");
    Path config =
        Files.writeString(
            tmp.resolve("worker.yaml"),
            """
        worker-id: ops-1
        tls-ca: %s
        token-file: %s
        log-format: json
        drain-timeout: 5s
        """
                .formatted(ca.caPem(), tokenFile));
    try (LocalRuntime rt =
            LocalRuntime.builder()
                .port(0)
                .tls(server.cert(), server.key())
                .requireBearerToken(TOKEN)
                .start();
        DistProcess worker =
            DistProcess.start(
                tmp,
                Map.of(
                    "PHRONY_RUNTIME_ADDR", rt.target(),
                    "PHRONY_WORKER_CONFIG", config.toString(),
                    "PHRONY_WORKER_LOG_LEVEL", "debug"),
                "run",
                "--http",
                "127.0.0.1:0",
                "--state-dir",
                tmp.resolve("state").toString())) {
      Await.until(
          "registered over TLS with the token",
          () -> rt.worker("ops-1").filter(w -> w.connected()).isPresent(),
          DistProcess.DEADLINE);
      int port = worker.httpPort();
      Await.until("ready", () -> DistProcess.status(port, "/readyz") == 200, DistProcess.DEADLINE);

      Call call = Call.of("echo", "default", "{\"hello\":\"world\"}");
      Outcome o = rt.dispatch(call).get(30, TimeUnit.SECONDS);
      assertThat(o.text()).isEqualTo("{\"hello\":\"world\"}");
      assertThat(DistProcess.get(port, "/metrics").body())
          .contains(
              "phrony_worker_invocations_total{code=\"\",outcome=\"result\",tool=\"echo@default\"} 1");

      worker.terminate();
      DistProcess.Result exit = worker.awaitExit(Duration.ofSeconds(60));
      assertThat(exit.exit()).as("stderr:%n%s", exit.err()).isZero();

      ObjectMapper json = new ObjectMapper();
      List<JsonNode> lines = new ArrayList<>();
      for (String line : exit.err().lines().toList()) {
        assertThat(line)
            .as("every line is one JSON object; stderr:%n%s", exit.err())
            .startsWith("{")
            .endsWith("}");
        lines.add(json.readTree(line));
      }
      List<JsonNode> aboutTheCall =
          lines.stream().filter(l -> call.callId().equals(l.path("call_id").asText())).toList();
      assertThat(aboutTheCall)
          .as("DEBUG lines about the call; stderr:%n%s", exit.err())
          .isNotEmpty()
          .allSatisfy(
              l -> {
                assertThat(l.path("session_id").asText()).isEqualTo(call.sessionId());
                assertThat(l.path("tool").asText()).isEqualTo("echo@default");
                assertThat(l.path("level").asText()).isEqualTo("DEBUG");
              });
      assertThat(lines).anySatisfy(l -> assertThat(l.path("msg").asText()).contains("drained"));
      assertThat(exit.err()).doesNotContain(TOKEN).doesNotContain("\"hello\"");

      DistProcess.Result shown = DistProcess.run(tmp, "config", "--config", config.toString());
      assertThat(shown.exit()).isZero();
      assertThat(shown.out()).doesNotContain(TOKEN).contains(tokenFile.toString());
    }
  }

  @Test
  void an_http_port_in_use_is_a_usage_error_naming_the_setting() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      String address = "127.0.0.1:" + taken.getLocalPort();
      DistProcess.Result r;
      try (DistProcess p =
          DistProcess.start(
              tmp,
              Map.of("PHRONY_WORKER_HTTP", address),
              "run",
              "--state-dir",
              tmp.resolve("state").toString())) {
        r = p.awaitExit(DistProcess.DEADLINE);
      }
      assertThat(r.exit()).isEqualTo(1);
      assertThat(r.err())
          .contains("phrony-worker run: PHRONY_WORKER_HTTP " + address + ": cannot listen (")
          .contains("choose another HOST:PORT, or turn the endpoint off" + " with --http none");
    }
  }
}
