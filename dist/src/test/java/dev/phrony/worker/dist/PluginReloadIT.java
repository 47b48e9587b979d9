package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Event;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.testkit.WorkerView;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real {@code bin/phrony-worker run} watching its plugins folder, under steady load from a
 * {@link LocalRuntime}: a jar copied in is served within 2 s, a jar replaced with new code (same
 * descriptor) answers with the new code (nothing re-registered), a jar removed leaves the
 * worker's {@code /handlers} and routing; no call of the load fails on the way.
 */
class PluginReloadIT {
  static final Duration TTL = Duration.ofSeconds(3);
  static final String WORKER = "reload-1";
  static final String ECHO = "echo@default";
  static final String ANSWER = "reload.answer@1.0.0";
  static final String FRESH = "reload.fresh@1.0.0";
  static final String OLD = "{\"v\":\"old\"}";
  static final String NEW = "{\"v\":\"new\"}";
  static final String FRESH_ANSWER = "{\"v\":\"fresh\"}";
  /** What the spec promises between a jar's atomic move into the folder and its key served. */
  static final Duration SERVED_WITHIN = Duration.ofSeconds(2);

  @TempDir
  Path tmp;

  /** The jars the scenario deploys: built before the worker starts. */
  record Jars(Path oldA, Path newA, Path fresh) {
    static Jars build(Path tmp) throws Exception {
      Path build = tmp.resolve("build");
      Path out = tmp.resolve("jars");
      return new Jars(
          GeneratedPlugins.jar(build, out.resolve("tool-a-old.jar"), "reload.a", "reload.answer",
              "1.0.0", 8, OLD),
          GeneratedPlugins.jar(build, out.resolve("tool-a-new.jar"), "reload.a", "reload.answer",
              "1.0.0", 8, NEW),
          GeneratedPlugins.jar(build, out.resolve("tool-fresh.jar"), "reload.fresh",
              "reload.fresh", "1.0.0", 8, FRESH_ANSWER));
    }
  }

  /** The plugins folder the worker starts on: a copy of the bundled echo, and tool-a.jar (old). */
  static Path pluginsFolder(Path tmp, Jars jars) throws Exception {
    Path plugins = Files.createDirectories(tmp.resolve("plugins"));
    GeneratedPlugins.copyBundled("echo", plugins);
    Files.copy(jars.oldA(), plugins.resolve("tool-a.jar"));
    return plugins;
  }

  static Call call(String key) {
    int at = key.indexOf('@');
    return Call.of(key.substring(0, at), key.substring(at + 1), "{\"sleep_ms\":20}");
  }

  private static Outcome await(CompletableFuture<Outcome> f) throws Exception {
    return f.get(30, TimeUnit.SECONDS);
  }

  /** Whether a registration the runtime would route to now advertises {@code key}. */
  private static boolean routable(LocalRuntime rt, String key) {
    return rt.workers().stream().anyMatch(w -> w.connected() && !w.leaseExpired()
        && w.handlers().stream().anyMatch(h -> h.key().equals(key)));
  }

  private static String registrations(LocalRuntime rt) {
    StringBuilder sb = new StringBuilder();
    for (WorkerView w : rt.workers()) {
      sb.append(String.format("%n  %s stream=%d connected=%s leaseExpired=%s inFlight=%d %s",
          w.workerId(), w.streamId(), w.connected(), w.leaseExpired(), w.inFlight(),
          w.handlers().stream().map(WorkerView.HandlerView::key).toList()));
    }
    return sb.toString();
  }

  @Test
  void jars_copied_in_replaced_and_removed_under_load_are_served_live_and_no_call_fails()
      throws Exception {
    Jars jars = Jars.build(tmp);
    Path plugins = pluginsFolder(tmp, jars);
    try (LocalRuntime rt = LocalRuntime.builder().port(0).leaseTtl(TTL).start();
        DistProcess worker = DistProcess.start(tmp, Map.of("PHRONY_RUNTIME_ADDR", rt.target()),
            "run", "--plugins", plugins.toString(), "--http", "127.0.0.1:0",
            "--state-dir", tmp.resolve("state").toString(), "--worker-id", WORKER,
            "--drain-timeout", "30s");
        LoadDriver<Outcome> load = new LoadDriver<>("reload-load", 8, List.of(ECHO, ANSWER),
            key -> rt.dispatch(call(key)))) {
      Await.until("worker registered", () -> rt.worker(WORKER).filter(w -> w.connected())
          .isPresent(), DistProcess.DEADLINE);
      int port = worker.httpPort();
      JsonNode before = WorkerOps.handlers(port);
      int generation0 = before.path("generation").asInt();
      assertThat(WorkerOps.keys(before)).as("/handlers at start: %s", before)
          .containsExactlyInAnyOrder(ECHO, ANSWER);
      assertThat(await(rt.dispatch(call(ANSWER))).text()).isEqualTo(OLD);

      load.start();
      Await.until("load running", () -> load.done().size() >= 50, Duration.ofSeconds(20));

      // (a) A new jar, moved in atomically: its key is served within 2 s. Latencies of a real
      // process are measured on the wall clock, the clock the promise is made in, as the load's
      // records are.
      GeneratedPlugins.deployAtomically(jars.fresh(), plugins, "tool-fresh.jar");
      long movedAt = System.nanoTime(); // wall clock: see above
      List<LoadDriver.Rec<Outcome>> probes;
      try (LoadDriver<Outcome> prober = new LoadDriver<>("reload-probe", 1, List.of(FRESH),
          key -> rt.dispatch(call(key))).start()) {
        worker.until("a call of " + FRESH + " answered", () -> prober.done().stream()
            .anyMatch(r -> r.outcome() instanceof Outcome.Result), Duration.ofSeconds(15));
        probes = prober.stop(Duration.ofSeconds(30));
      }
      long servedMs = (probes.stream().filter(r -> r.outcome() instanceof Outcome.Result)
          .mapToLong(LoadDriver.Rec::doneNanos).min().orElseThrow() - movedAt) / 1_000_000;
      WorkerOps.report("PluginReloadIT: copy -> served %d ms (%d probe dispatches)%n",
          servedMs, probes.size());
      assertThat(servedMs).as("ms from the atomic move of tool-fresh.jar to its first result;"
              + " registrations:%s%nworker stderr:%n%s", registrations(rt), worker.stderr())
          .isBetween(0L, SERVED_WITHIN.toMillis());
      for (LoadDriver.Rec<Outcome> probe : probes) {
        assertThat(probe.outcome()).as("probe %s", probe).isInstanceOf(Outcome.Result.class);
        assertThat(probe.outcome().text()).isEqualTo(FRESH_ANSWER);
      }
      JsonNode afterA = WorkerOps.handlers(port);
      int generationA = afterA.path("generation").asInt();
      assertThat(generationA).as("generation after a key was added: %s", afterA)
          .isGreaterThan(1).isGreaterThan(generation0);
      assertThat(WorkerOps.keys(afterA)).containsExactlyInAnyOrder(ECHO, ANSWER, FRESH);
      assertThat(rt.worker(WORKER + ".g" + generationA)).as("registrations:%s", registrations(rt))
          .hasValueSatisfying(w -> assertThat(w.connected()).isTrue());
      load.add(FRESH);

      // (b) tool-a.jar replaced by new code with the same descriptor: the new code answers,
      // and nothing goes on the wire (no register on any stream).
      long registersBefore = rt.events().stream().filter(e -> "register".equals(e.type()))
          .count();
      GeneratedPlugins.deployAtomically(jars.newA(), plugins, "tool-a.jar");
      long replacedAt = System.nanoTime(); // wall clock: the promises below count from here
      AtomicLong firstNewAt = new AtomicLong(-1);
      // When the worker's log first showed the replacement's reload (wall clock, reported).
      AtomicLong reloadSeenAt = new AtomicLong(-1);
      worker.until("the new code of tool-a.jar answers", () -> {
        if (reloadSeenAt.get() < 0 && WorkerOps.reloadLines(worker.stderr()).size() >= 2) {
          reloadSeenAt.set(System.nanoTime()); // wall clock: reported
        }
        if (rt.dispatchAndWait(call(ANSWER)).text().equals(NEW)) {
          firstNewAt.set(System.nanoTime()); // wall clock: reported
          return true;
        }
        return false;
      }, Duration.ofSeconds(15));
      WorkerOps.report("PluginReloadIT: replace -> first new answer %d ms (reload logged by %d"
          + " ms)%n", (firstNewAt.get() - replacedAt) / 1_000_000,
          reloadSeenAt.get() < 0 ? -1 : (reloadSeenAt.get() - replacedAt) / 1_000_000);
      // The promise is about the time after one lease TTL of the wall clock from the
      // replacement (the runtime's lease, a real process's heartbeats): that time passing is
      // what is waited for, not a guess at how long something takes.
      Await.until("one lease TTL since the replacement",
          () -> System.nanoTime() - replacedAt >= TTL.toNanos(), TTL.plusSeconds(1));
      List<CompletableFuture<Outcome>> handful = new ArrayList<>();
      for (int i = 0; i < 12; i++) {
        handful.add(rt.dispatch(call(ANSWER)));
      }
      for (CompletableFuture<Outcome> f : handful) {
        Outcome o = await(f);
        assertThat(o).as("%s", o).isInstanceOf(Outcome.Result.class);
        assertThat(o.text()).as("an answer one lease TTL after the replacement, by %s",
            o.trace().workerId()).isEqualTo(NEW);
      }
      JsonNode afterB = WorkerOps.handlers(port);
      assertThat(afterB.path("generation").asInt())
          .as("same descriptor, same generation: %s", afterB).isEqualTo(generationA);
      assertThat(rt.events().stream().filter(e -> "register".equals(e.type())).count())
          .as("registers sent since the code-only replacement; registrations:%s",
              registrations(rt))
          .isEqualTo(registersBefore);

      // (c) tool-fresh.jar removed: within a lease TTL + 1 s /handlers no longer lists it, and
      // soon after no registration the runtime routes to advertises it.
      load.remove(FRESH);
      Files.delete(plugins.resolve("tool-fresh.jar"));
      long removedAt = System.nanoTime(); // wall clock: the promises below count from here
      Await.until("GET /handlers without " + FRESH,
          () -> !WorkerOps.keysNow(port).contains(FRESH), TTL.plusSeconds(1));
      WorkerOps.report("PluginReloadIT: remove -> gone from /handlers %d ms%n",
          WorkerOps.millisSince(removedAt));
      JsonNode afterC = WorkerOps.handlers(port);
      assertThat(WorkerOps.keys(afterC)).as("%s", afterC).containsExactlyInAnyOrder(ECHO, ANSWER);
      assertThat(afterC.path("generation").asInt()).isGreaterThan(generationA);
      assertThat(afterC.path("problems")).as("%s", afterC).isEmpty();
      JsonNode again = WorkerOps.reload(port);
      assertThat(again.path("outcome").asText()).as("POST /plugins/reload: %s", again)
          .isEqualTo("unchanged");
      // Out of routing a lease TTL + 2 s of the wall clock after the removal at the latest.
      Await.until("no routable registration advertises " + FRESH, () -> !routable(rt, FRESH),
          TTL.plusSeconds(2).minus(Duration.ofNanos(System.nanoTime() - removedAt)));
      WorkerOps.report("PluginReloadIT: remove -> out of routing %d ms%n",
          WorkerOps.millisSince(removedAt));
      // The earlier generations' streams close once idle (their leases lapsed long ago).
      int generationC = afterC.path("generation").asInt();
      Await.until("only the newest generation's stream open; registrations:" + registrations(rt),
          () -> rt.workers().stream().filter(WorkerView::connected).map(WorkerView::workerId)
              .toList().equals(List.of(WORKER + ".g" + generationC)), TTL.plusSeconds(5));

      List<LoadDriver.Rec<Outcome>> recs = load.stop(Duration.ofSeconds(30));
      WorkerOps.report("PluginReloadIT: load %d calls %s%n", recs.size(),
          LoadDriver.perKey(recs));
      List<LoadDriver.Rec<Outcome>> bad = LoadDriver.first(recs,
          r -> !(r.outcome() instanceof Outcome.Result), 20);
      assertThat(bad).as("calls of the load without a result (of %d); worker stderr:%n%s",
          recs.size(), worker.stderr()).isEmpty();
      long ttlAfterReplace = replacedAt + TTL.toNanos();
      assertThat(LoadDriver.first(recs, r -> r.key().equals(ANSWER)
              && r.sentNanos() >= ttlAfterReplace && !r.outcome().text().equals(NEW), 20))
          .as("load calls of %s sent a lease TTL after the replacement, not answered %s",
              ANSWER, NEW)
          .isEmpty();
      // Which stream still answered with the old code once the reload was logged.
      long reloadedAt = reloadSeenAt.get();
      Map<String, Long> oldAfterReload = new java.util.TreeMap<>();
      long lastOldMs = -1;
      for (LoadDriver.Rec<Outcome> r : recs) {
        if (reloadedAt > 0 && r.key().equals(ANSWER) && r.sentNanos() > reloadedAt
            && r.outcome().text().equals(OLD)) {
          oldAfterReload.merge(r.outcome().trace().workerId(), 1L, Long::sum);
          lastOldMs = Math.max(lastOldMs, (r.sentNanos() - replacedAt) / 1_000_000);
        }
      }
      WorkerOps.report("PluginReloadIT: old answers to load calls sent after the code-only reload"
          + " was logged, by worker: %s; last one sent %d ms after the replacement%n",
          oldAfterReload, lastOldMs);
      assertThat(recs.stream().filter(r -> r.key().equals(FRESH)).count())
          .as("load calls of %s", FRESH).isPositive();

      String err = worker.stderr();
      List<String> reloads = WorkerOps.reloadLines(err);
      WorkerOps.report("PluginReloadIT: reload lines:%n  %s%n", String.join("\n  ", reloads));
      assertThat(err).contains("plugins_reloaded");
      assertThat(reloads).as("one line per reload").hasSize(3);
      assertThat(reloads.get(0)).contains("added=" + FRESH, "generation=" + generationA);
      assertThat(reloads.get(1)).contains("replaced=" + ANSWER, "generation=" + generationA);
      assertThat(reloads.get(2)).contains("removed=" + FRESH, "generation=" + generationC);

      worker.terminate();
      DistProcess.Result exit = worker.awaitExit(Duration.ofSeconds(30));
      assertThat(exit.exit()).as("exit status; stderr:%n%s", exit.err()).isZero();
      assertThat(exit.err()).contains("drained");
    }
  }
}
