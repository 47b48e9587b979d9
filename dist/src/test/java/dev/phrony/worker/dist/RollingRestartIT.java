package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.testkit.WorkerView;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A rolling restart of three {@code bin/phrony-worker run} processes under steady load: each in
 * turn gets SIGTERM, drains (leaves routing, serves what still comes until its lease lapses,
 * finishes its calls), exits 0 and comes back with the same state dir. No call of the load fails,
 * and none is refused with {@code draining}.
 */
class RollingRestartIT {
  private static final Duration TTL = Duration.ofSeconds(2);
  private static final List<String> IDS = List.of("roll-1", "roll-2", "roll-3");

  @TempDir Path tmp;

  private DistProcess start(LocalRuntime rt, String id) throws Exception {
    return DistProcess.start(
        tmp,
        Map.of("PHRONY_RUNTIME_ADDR", rt.target()),
        "run",
        "--worker-id",
        id,
        "--state-dir",
        tmp.resolve(id).toString(),
        "--http",
        "127.0.0.1:0",
        "--drain-timeout",
        "30s");
  }

  private static boolean registered(LocalRuntime rt, String id, long notStream) {
    return rt.worker(id)
        .filter(w -> w.connected() && !w.leaseExpired() && w.streamId() != notStream)
        .isPresent();
  }

  private static String registrations(LocalRuntime rt) {
    StringBuilder sb = new StringBuilder();
    for (WorkerView w : rt.workers()) {
      sb.append(
          String.format(
              "%n  %s stream=%d connected=%s leaseExpired=%s inFlight=%d",
              w.workerId(), w.streamId(), w.connected(), w.leaseExpired(), w.inFlight()));
    }
    return sb.toString();
  }

  @Test
  void restarting_three_workers_one_by_one_under_load_loses_no_call() throws Exception {
    List<DistProcess> workers = new ArrayList<>();
    StringBuilder stderrs = new StringBuilder();
    try (LocalRuntime rt =
            LocalRuntime.builder().port(0).leaseTtl(TTL).queueWait(Duration.ofSeconds(10)).start();
        LoadDriver<Outcome> load =
            new LoadDriver<>(
                "rolling-load",
                8,
                List.of("echo@default"),
                key -> rt.dispatch(Call.of("echo", "default", "{\"sleep_ms\":50}")))) {
      // One after the other, so the runtime routes in this order: it gives a key's calls to the
      // first registration with a live lease and a free slot, so each worker in turn takes the
      // whole load while the one before it drains, and every one of them serves some.
      for (String id : IDS) {
        workers.add(start(rt, id));
        Await.until(id + " registered", () -> registered(rt, id, -1), DistProcess.DEADLINE);
      }
      load.start();
      Await.until("load running", () -> load.done().size() >= 20, Duration.ofSeconds(20));

      long[] sigtermAt = new long[IDS.size()];
      long[] exitedAt = new long[IDS.size()];
      for (int i = 0; i < IDS.size(); i++) {
        String id = IDS.get(i);
        long oldStream = rt.worker(id).orElseThrow().streamId();
        DistProcess old = workers.get(i);
        // The signal and the exit, on the wall clock the load stamps its calls with: they place
        // the calls among them (an order of events, reported, not a wait).
        sigtermAt[i] = System.nanoTime();
        long t0 = sigtermAt[i];
        old.terminate();
        DistProcess.Result exit = old.awaitExit(Duration.ofSeconds(40));
        exitedAt[i] = System.nanoTime(); // the same wall clock, see above
        stderrs.append(String.format("%n--- %s (first run) stderr:%n%s", id, exit.err()));
        assertThat(exit.exit()).as("%s exit status; stderr:%n%s", id, exit.err()).isZero();
        long drainedMs = WorkerOps.millisSince(t0);
        DistProcess again = start(rt, id);
        workers.set(i, again);
        Await.until(
            id + " registered again; registrations:" + registrations(rt),
            () -> registered(rt, id, oldStream),
            DistProcess.DEADLINE);
        WorkerOps.report(
            "RollingRestartIT: %s drained and exited in %d ms, back after %d ms;"
                + " %d calls answered so far%n",
            id, drainedMs, WorkerOps.millisSince(t0), load.done().size());
      }

      // Let the last restarted worker take part, then stop the load.
      int before = load.done().size();
      Await.until(
          "load continues after the last restart",
          () -> load.done().size() >= before + 20,
          Duration.ofSeconds(20));
      List<LoadDriver.Rec<Outcome>> recs = load.stop(Duration.ofSeconds(30));

      Map<String, Long> byKind =
          recs.stream()
              .collect(
                  Collectors.groupingBy(
                      r ->
                          r.outcome() == null
                              ? "exception"
                              : r.outcome().getClass().getSimpleName(),
                      TreeMap::new,
                      Collectors.counting()));
      long draining =
          recs.stream()
              .filter(
                  r -> r.outcome() instanceof Outcome.ToolError e && e.code().equals("draining"))
              .count();
      Map<String, Long> byWorker =
          recs.stream()
              .filter(r -> r.outcome() != null && r.outcome().trace().workerId() != null)
              .collect(
                  Collectors.groupingBy(
                      r -> r.outcome().trace().workerId(), TreeMap::new, Collectors.counting()));
      WorkerOps.report(
          "RollingRestartIT: %d calls: %s; draining nacks: %d; by worker: %s%n",
          recs.size(), byKind, draining, byWorker);

      // Each worker, when it got SIGTERM, was the first the runtime routes to: until its lease
      // lapsed it got calls sent after the signal, and served them.
      long[] servedWhileDraining = new long[IDS.size()];
      for (int i = 0; i < IDS.size(); i++) {
        String id = IDS.get(i);
        long from = sigtermAt[i];
        long to = exitedAt[i];
        servedWhileDraining[i] =
            recs.stream()
                .filter(
                    r ->
                        r.sentNanos() > from
                            && r.doneNanos() < to
                            && r.outcome() instanceof Outcome.Result
                            && id.equals(r.outcome().trace().workerId()))
                .count();
      }
      WorkerOps.report(
          "RollingRestartIT: calls sent after SIGTERM and served by the draining" + " worker: %s%n",
          java.util.Arrays.toString(servedWhileDraining));
      for (DistProcess w : workers) {
        stderrs.append(String.format("%n--- pid %d stderr:%n%s", w.pid(), w.stderr()));
      }
      assertThat(draining).as("calls nacked 'draining'; stderr:%s", stderrs).isZero();
      assertThat(LoadDriver.first(recs, r -> !(r.outcome() instanceof Outcome.Result), 20))
          .as("calls of the load without a result (of %d); stderr:%s", recs.size(), stderrs)
          .isEmpty();
      assertThat(byWorker.keySet()).as("workers that served calls").containsAll(Set.copyOf(IDS));
      for (int i = 0; i < IDS.size(); i++) {
        assertThat(servedWhileDraining[i])
            .as("calls sent after %s's SIGTERM that it served before it exited", IDS.get(i))
            .isPositive();
      }

      for (int i = 0; i < IDS.size(); i++) {
        workers.get(i).terminate();
      }
      for (int i = 0; i < IDS.size(); i++) {
        DistProcess.Result exit = workers.get(i).awaitExit(Duration.ofSeconds(40));
        assertThat(exit.exit()).as("%s exit; stderr:%n%s", IDS.get(i), exit.err()).isZero();
      }
    } finally {
      for (DistProcess w : workers) {
        w.close();
      }
    }
  }
}
