package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Event;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A held result outlives a clean build: a worker run from the distribution a checkout builds
 * (inside {@code dist/target/}) keeps its state outside the build output by default, so after
 * {@code ./mvnw clean} (the build output deleted) and a rebuild (a fresh copy there) the result is
 * still held, advertised at register and acknowledged.
 */
class StateSurvivesRebuildIT {
  private static final Duration WAIT = Duration.ofSeconds(60);

  @TempDir Path tmp;

  @Test
  void a_held_result_survives_clean_and_rebuild_and_is_served_after_restart() throws Exception {
    Path checkout = tmp.resolve("checkout");
    Path built = checkout.resolve("dist/target/dist/phrony-worker");
    Path home = Files.createDirectories(tmp.resolve("home"));
    Map<String, String> env =
        Map.of("HOME", home.toString(), "XDG_STATE_HOME", "", "PHRONY_WORKER_STATE_DIR", "");
    Path state = home.resolve(".local/state/phrony-worker");
    Call pay =
        Call.of(
                "pay-1",
                "s-pay-1",
                "payments.process-payment",
                "1.0.0",
                "{\"amount\":10,\"currency\":\"EUR\",\"payee\":\"ACME\"}")
            .withSideEffectClass("non_idempotent_write");

    try (LocalRuntime rt = LocalRuntime.builder().port(0).withholdResultAcks(true).start()) {
      DistProcess.copyTree(DistProcess.distDir(), built); // ./mvnw package
      try (DistProcess first =
          DistProcess.start(built, tmp, env, "run", "--runtime", rt.target(), "--http", "none")) {
        // Registered first: a dispatch waits 10 s at most, and a loaded machine starts slower.
        rt.awaitEvent(Event.in(WorkClientMsg.BodyCase.REGISTER), WAIT);
        Outcome o = rt.dispatch(pay).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(o).isInstanceOf(Outcome.Result.class);
        assertThat(first.stderr()).contains("state in " + state);
        first.kill(); // the runtime withheld the ack: the result is still held
      }

      deleteTree(checkout.resolve("dist/target")); // ./mvnw clean
      assertThat(state.resolve("outbox")).isDirectory();
      DistProcess.copyTree(DistProcess.distDir(), built); // and a rebuild

      rt.withholdResultAcks(false);
      rt.clearLedger(); // the runtime's record goes too: only the worker still has the result
      long before = rt.events().stream().mapToLong(Event::seq).max().orElse(-1);
      Map<String, String> debug = new java.util.HashMap<>(env);
      debug.put("PHRONY_WORKER_LOG_LEVEL", "DEBUG");
      try (DistProcess second =
          DistProcess.start(built, tmp, debug, "run", "--runtime", rt.target(), "--http", "none")) {
        Event register =
            rt.awaitEvent(
                e -> e.seq() > before && Event.in(WorkClientMsg.BodyCase.REGISTER).test(e), WAIT);
        assertThat(register.clientMsg().getRegister().getInFlightList())
            .extracting(c -> c.getCallId())
            .contains("pay-1");
        // Recovery dispatches the same call id again: the held result answers it.
        Outcome again = rt.dispatch(pay).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(again).isInstanceOf(Outcome.Result.class);
        Await.until("acknowledged and released", () -> released(state, "pay-1"), WAIT);
        assertThat(second.stderr()).as("the payment ran once").doesNotContain("handler started");
        second.interrupt();
        assertThat(second.awaitExit(WAIT).exit()).isZero();
      }
    }
  }

  private static boolean released(Path state, String callId) {
    try {
      return dev.phrony.worker.outbox.OutboxView.read(state).find(callId).isEmpty();
    } catch (Exception e) {
      return false; // read while the worker writes: look again
    }
  }

  private static void deleteTree(Path dir) throws IOException {
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }
}
