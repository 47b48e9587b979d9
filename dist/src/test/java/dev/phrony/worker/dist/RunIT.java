package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bin/phrony-worker run} as a child process against a {@link LocalRuntime}: it serves the
 * bundled plugins, and on SIGTERM drains (leaving routing while it serves what still comes,
 * finishing running calls) and exits 0.
 */
class RunIT {
  @TempDir Path tmp;

  private static final Pattern ECHO_SLOTS =
      Pattern.compile(
          "(?m)^phrony_worker_slots_in_use\\{[^}]*tool=\"echo@default\"[^}]*\\} ([0-9.]+)");

  /** The worker's own count of echo slots in use, from its /metrics; -1 when unreadable. */
  private static double echoSlotsInUse(int port) {
    try {
      Matcher m = ECHO_SLOTS.matcher(DistProcess.get(port, "/metrics").body());
      return m.find() ? Double.parseDouble(m.group(1)) : -1;
    } catch (java.io.IOException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }

  private static Outcome await(CompletableFuture<Outcome> f) throws Exception {
    return f.get(30, TimeUnit.SECONDS);
  }

  @Test
  void serves_the_bundled_plugins_then_drains_on_sigterm_and_exits_0() throws Exception {
    try (LocalRuntime rt = LocalRuntime.builder().port(0).leaseTtl(Duration.ofSeconds(10)).start();
        DistProcess worker =
            DistProcess.start(
                tmp,
                Map.of("PHRONY_RUNTIME_ADDR", rt.target()),
                "run",
                "--worker-id",
                "proc-1",
                "--drain-timeout",
                "30s",
                "--http",
                "127.0.0.1:0",
                "--state-dir",
                tmp.resolve("state").toString())) {
      Await.until(
          "worker registered",
          () -> rt.worker("proc-1").filter(w -> w.connected()).isPresent(),
          DistProcess.DEADLINE);

      Outcome forecast =
          await(rt.dispatch(Call.of("weather.get-forecast", "1.0.0", "{\"city\":\"Oslo\"}")));
      assertThat(forecast)
          .as("worker stderr:%n%s", worker.stderr())
          .isInstanceOf(Outcome.Result.class);
      assertThat(forecast.text()).contains("\"city\":\"Oslo\"");
      Outcome noCity = await(rt.dispatch(Call.of("weather.get-forecast", "1.0.0", "{}")));
      assertThat(noCity)
          .as("worker stderr:%n%s", worker.stderr())
          .isInstanceOfSatisfying(
              Outcome.ToolError.class, e -> assertThat(e.code()).isEqualTo("invalid_args"));
      Outcome paid =
          await(
              rt.dispatch(
                  Call.of(
                      "payments.process-payment",
                      "1.0.0",
                      "{\"amount\":12.5,\"currency\":\"EUR\",\"payee\":\"ACME\"}")));
      assertThat(paid.text()).contains("\"payment_id\":\"pay_").contains("succeeded");

      CompletableFuture<Outcome> running =
          rt.dispatch(Call.of("echo", "default", "{\"sleep_ms\":3000}"));
      // The runtime counts the slot when it sends the invoke; wait until the worker has it too,
      // or SIGTERM may come first and the drain find nothing running.
      int port = worker.httpPort();
      Await.until(
          "echo running in the worker", () -> echoSlotsInUse(port) == 1, Duration.ofSeconds(30));
      worker.terminate();
      worker.awaitStderr("left routing", Duration.ofSeconds(30));
      // Until its lease lapses the runtime still routes here: served, not refused.
      Outcome during = await(rt.dispatch(Call.of("echo", "default", "{\"during\":1}")));
      assertThat(during)
          .as("worker stderr:%n%s", worker.stderr())
          .isInstanceOf(Outcome.Result.class);
      assertThat(await(running).text()).isEqualTo("{\"sleep_ms\":3000}");

      DistProcess.Result exit = worker.awaitExit(Duration.ofSeconds(60));
      assertThat(exit.exit()).as("exit status; stderr:%n%s", exit.err()).isZero();
      assertThat(exit.err()).contains("drained").doesNotContain("Exception");
    }
  }

  @Test
  void worker_yaml_handler_settings_reach_the_registration_the_slots_and_the_calls()
      throws Exception {
    Path config =
        java.nio.file.Files.writeString(
            tmp.resolve("handlers.yaml"),
            """
        handlers:
          echo@default:
            max-concurrency: 3
            deadline: 1s
          "payments.*":
            enabled: false
        """);
    try (LocalRuntime rt = LocalRuntime.builder().port(0).queueWait(Duration.ofSeconds(2)).start();
        DistProcess worker =
            DistProcess.start(
                tmp,
                Map.of("PHRONY_RUNTIME_ADDR", rt.target()),
                "run",
                "--worker-id",
                "proc-2",
                "--config",
                config.toString(),
                "--http",
                "127.0.0.1:0",
                "--state-dir",
                tmp.resolve("state-2").toString())) {
      Await.until(
          "worker registered",
          () -> rt.worker("proc-2").filter(w -> w.connected()).isPresent(),
          DistProcess.DEADLINE);

      var handlers = rt.worker("proc-2").orElseThrow().handlers();
      assertThat(handlers)
          .extracting(h -> h.key() + " " + h.maxConcurrency())
          .as("what the runtime was told")
          .contains("echo@default 3")
          .noneMatch(h -> h.startsWith("payments."));
      assertThat(DistProcess.get(worker.httpPort(), "/metrics").body())
          .contains("phrony_worker_slots_max{tool=\"echo@default\"} 3");

      Outcome slow = await(rt.dispatch(Call.of("echo", "default", "{\"sleep_ms\":20000}")));
      assertThat(slow)
          .as("worker stderr:%n%s", worker.stderr())
          .isInstanceOfSatisfying(
              Outcome.ToolError.class, e -> assertThat(e.code()).isEqualTo("deadline_exceeded"));
      Outcome paid =
          await(
              rt.dispatch(
                  Call.of(
                      "payments.process-payment",
                      "1.0.0",
                      "{\"amount\":1,\"currency\":\"EUR\",\"payee\":\"ACME\"}")));
      assertThat(paid).as("a disabled handler is not served").isNotInstanceOf(Outcome.Result.class);
      assertThat(worker.stderr())
          .contains("handler echo@default: max-concurrency 3 (file " + config + ":3)");
    }
  }
}
