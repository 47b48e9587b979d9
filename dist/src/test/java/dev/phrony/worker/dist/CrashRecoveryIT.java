package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.outbox.OutboxEntry;
import dev.phrony.worker.outbox.OutboxView;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.testkit.WorkerView;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The durable outbox across {@code kill -9} of a real {@code bin/phrony-worker run} process:
 * completed payments are never lost, a completed call is never run twice, and a call cut off
 * mid-run is refused rather than repeated.
 */
class CrashRecoveryIT {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final String PAY = "payments.process-payment";

  @TempDir Path tmp;

  private Path state() {
    return tmp.resolve("state");
  }

  private DistProcess startWorker(LocalRuntime rt) throws Exception {
    return DistProcess.start(
        tmp,
        Map.of("PHRONY_RUNTIME_ADDR", rt.target(), "PHRONY_WORKER_LOG_LEVEL", "DEBUG"),
        "run",
        "--state-dir",
        state().toString(),
        "--drain-timeout",
        "5s",
        "--http",
        "none");
  }

  /** The worker registered on a stream newer than {@code afterStream}. */
  private static WorkerView awaitRegistered(LocalRuntime rt, long afterStream) {
    Await.until(
        "worker registered",
        () -> rt.workers().stream().anyMatch(w -> w.connected() && w.streamId() > afterStream),
        WAIT);
    return rt.workers().stream()
        .filter(w -> w.connected() && w.streamId() > afterStream)
        .findFirst()
        .orElseThrow();
  }

  private static Call payment(String callId, long processingMs) {
    return Call.of(
            callId,
            "session-" + callId,
            PAY,
            "1.0.0",
            "{\"amount\":10,\"currency\":\"EUR\",\"payee\":\"ACME\",\"processing_ms\":"
                + processingMs
                + "}")
        .withSideEffectClass("non_idempotent_write");
  }

  private static Outcome await(CompletableFuture<Outcome> f) throws Exception {
    return f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
  }

  private static String paymentId(Outcome o) {
    assertThat(o).as("outcome %s", o).isInstanceOf(Outcome.Result.class);
    String text = o.text();
    int i = text.indexOf("\"payment_id\":\"") + 14;
    return text.substring(i, text.indexOf('"', i));
  }

  /** "handler started" DEBUG lines of {@code callId} (exactly that id in the MDC). */
  private static long handlerRuns(DistProcess worker, String callId) {
    Pattern id = Pattern.compile("call_id=" + Pattern.quote(callId) + "(?![\\w-])");
    return worker
        .stderr()
        .lines()
        .filter(l -> l.contains("handler started") && id.matcher(l).find())
        .count();
  }

  private Optional<OutboxEntry> kept(String callId) throws Exception {
    return OutboxView.read(state()).find(callId);
  }

  @Test
  void results_survive_kill_9_and_no_call_runs_twice() throws Exception {
    try (LocalRuntime rt = LocalRuntime.builder().port(0).withholdResultAcks(true).start()) {
      DistProcess first = startWorker(rt);
      WorkerView w1 = awaitRegistered(rt, 0);

      // B: completed, but the runtime's record of them is lost (ledger cleared).
      Map<String, String> paidB = new HashMap<>();
      for (int i = 0; i < 3; i++) {
        String id = "b-" + i;
        paidB.put(id, paymentId(await(rt.dispatch(payment(id, 0)))));
      }
      rt.clearLedger();
      // A: completed and recorded by the runtime, acks withheld, so the worker still holds them.
      List<String> a = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        String id = "a-" + i;
        paymentId(await(rt.dispatch(payment(id, 0))));
        a.add(id);
      }
      // S: cut off mid-run.
      CompletableFuture<Outcome> slow = rt.dispatch(payment("s-0", 60_000));
      Await.until(
          "s-0 running with a durable intent",
          () -> {
            try {
              return kept("s-0").map(e -> e.state() == OutboxEntry.State.RUNNING).orElse(false);
            } catch (Exception e) {
              return false;
            }
          },
          WAIT);
      for (String id : a) {
        assertThat(kept(id))
            .hasValueSatisfying(e -> assertThat(e.state()).isEqualTo(OutboxEntry.State.HELD));
      }
      first.kill();
      assertThat(await(slow))
          .isInstanceOfSatisfying(
              Outcome.DispatchError.class,
              e -> assertThat(e.kind()).isEqualTo(Outcome.DispatchError.Kind.INDETERMINATE));

      // What an operator sees: the table of outbox list (once lost at exit, as it ends without
      // a println of its own).
      DistProcess.Result listed =
          DistProcess.run(tmp, "outbox", "list", "--state-dir", state().toString());
      assertThat(listed.exit()).as("stderr: %s", listed.err()).isZero();
      assertThat(listed.out())
          .startsWith("CALL_ID")
          .containsPattern("(?m)^a-0 +held +" + PAY)
          .containsPattern("(?m)^s-0 +\\w+ +" + PAY);

      rt.withholdResultAcks(false);
      try (DistProcess second = startWorker(rt)) {
        WorkerView w2 = awaitRegistered(rt, w1.streamId());
        assertThat(w2.workerId()).as("worker id kept in the state dir").isEqualTo(w1.workerId());
        // The runtime's ledger acked A through in_flight; the worker let them go.
        Await.until(
            "A released",
            () ->
                a.stream()
                    .allMatch(
                        id -> {
                          try {
                            return kept(id).isEmpty();
                          } catch (Exception e) {
                            return false;
                          }
                        }),
            WAIT);
        // B: invoked again, answered from the held result; the handler does not run.
        for (var e : paidB.entrySet()) {
          Outcome again = await(rt.dispatch(payment(e.getKey(), 0)));
          assertThat(paymentId(again)).isEqualTo(e.getValue());
          assertThat(handlerRuns(second, e.getKey())).isZero();
        }
        // S: refused, not run a second time.
        assertThat(await(rt.dispatch(payment("s-0", 0))))
            .isInstanceOfSatisfying(
                Outcome.ToolError.class,
                e -> assertThat(e.code()).isEqualTo("previous_attempt_interrupted"));
        assertThat(handlerRuns(second, "s-0")).isZero();
        assertThat(kept("s-0"))
            .hasValueSatisfying(
                e -> assertThat(e.state()).isEqualTo(OutboxEntry.State.INTERRUPTED));
        assertThat(OutboxView.read(state()).problems()).isEmpty();
        // A handler still works after all that, and a real run is visible to handlerRuns (so
        // the zero counts above mean something).
        assertThat(paymentId(await(rt.dispatch(payment("c-0", 0))))).startsWith("pay_");
        assertThat(handlerRuns(second, "c-0")).isEqualTo(1);
      }
    }
  }

  @Test
  void twenty_kills_at_varied_points_lose_and_corrupt_nothing() throws Exception {
    Random random = new Random(42);
    try (LocalRuntime rt = LocalRuntime.builder().port(0).start()) {
      long lastStream = 0;
      Map<String, Outcome> cutOff = new HashMap<>();
      for (int round = 0; round < 20; round++) {
        try (DistProcess worker = startWorker(rt)) {
          lastStream = awaitRegistered(rt, lastStream).streamId();
          OutboxView view = OutboxView.read(state());
          assertThat(view.problems()).as("round %d: damaged records", round).isEmpty();
          assertThat(Files.exists(state().resolve("corrupt"))).isFalse();

          // Every call cut off by the last kill is either known here or was never started;
          // invoked again, it is answered from the record or refused, never run twice.
          for (String id : cutOff.keySet()) {
            Optional<OutboxEntry> e = view.find(id);
            Outcome again = await(rt.dispatch(payment(id, 0)));
            if (e.isPresent() && e.get().state() == OutboxEntry.State.INTERRUPTED) {
              assertThat(again)
                  .isInstanceOfSatisfying(
                      Outcome.ToolError.class,
                      t -> assertThat(t.code()).isEqualTo("previous_attempt_interrupted"));
              assertThat(handlerRuns(worker, id)).isZero();
            } else if (e.isPresent()) {
              assertThat(paymentId(again)).startsWith("pay_");
              assertThat(handlerRuns(worker, id)).isZero();
            } else {
              // No intent survived: the handler never started, so running it now is its first run.
              assertThat(paymentId(again)).startsWith("pay_");
              assertThat(handlerRuns(worker, id)).isEqualTo(1);
            }
          }

          cutOff.clear();
          List<CompletableFuture<Outcome>> calls = new ArrayList<>();
          List<String> ids = new ArrayList<>();
          for (int i = 0; i < 12; i++) {
            String id = "r" + round + "-" + i;
            ids.add(id);
            calls.add(rt.dispatch(payment(id, random.nextInt(40))));
          }
          // Kill at a different point each round: before, during and after the calls finish.
          LockSupport.parkNanos(Duration.ofMillis(random.nextInt(250)).toNanos());
          worker.kill();
          for (int i = 0; i < calls.size(); i++) {
            Outcome o = await(calls.get(i));
            if (o instanceof Outcome.DispatchError) {
              cutOff.put(ids.get(i), o);
            } else {
              assertThat(paymentId(o)).startsWith("pay_");
            }
          }
        }
      }
      try (DistProcess last = startWorker(rt)) {
        awaitRegistered(rt, lastStream);
        assertThat(OutboxView.read(state()).problems()).isEmpty();
      }
    }
  }
}
