package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.phrony.worker.testkit.Await;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A real {@code bin/phrony-worker run} watching its plugins folder, under steady load from a
 * runtime ({@link Target}): a jar copied in is served within 2 s, a jar replaced with new code
 * (same descriptor) answers with the new code (nothing re-registered), a jar removed leaves the
 * worker's {@code /handlers} and routing; no call of the load fails on the way. Each step's latency
 * is printed under the name of the test that runs it: {@link PluginReloadIT} against LocalRuntime,
 * {@link RealRuntimeReloadIT} against the real runtime's code.
 */
final class ReloadScenario {
  static final Duration TTL = Duration.ofSeconds(3);
  static final String ECHO = "echo@default";
  static final String ANSWER = "reload.answer@1.0.0";
  static final String FRESH = "reload.fresh@1.0.0";
  static final String OLD = "{\"v\":\"old\"}";
  static final String NEW = "{\"v\":\"new\"}";
  static final String FRESH_ANSWER = "{\"v\":\"fresh\"}";

  /** The arguments of every call: each takes a little while, so calls overlap a reload. */
  static final String ARGS = "{\"sleep_ms\":20}";

  /** What the spec promises between a jar's atomic move into the folder and its key served. */
  static final Duration SERVED_WITHIN = Duration.ofSeconds(2);

  /**
   * What the scenario needs of the runtime the worker serves. Its lease TTL is {@link #TTL}.
   * Conditions answer false while the runtime cannot tell (they are waited on).
   */
  interface Target {
    /** The Work address the worker dials. */
    String address();

    /** One call of {@code key} with {@link #ARGS}; completes with its answer. */
    CompletableFuture<Reply> dispatch(String key);

    /** Whether {@code workerId} is registered on a stream that is open. */
    boolean connected(String workerId);

    /** Whether {@code workerId}'s is the only stream open. */
    boolean onlyOpen(String workerId);

    /** How many {@code register} messages the runtime has received so far. */
    long registers();

    /** Whether a call of {@code key} would reach a worker now. */
    boolean routes(String key);

    /** The most that {@link #routes} may still hold after a key's jar was removed. */
    Duration outOfRoutingWithin();

    /** What the last {@link #routes} saw, for the report: "" or " (what)". */
    default String lastRoute() {
      return "";
    }

    /** Its state, for a failure's message. */
    String describe();
  }

  /**
   * One answer: {@code ok} for a worker's result, {@code text} its payload, {@code by} the worker
   * that answered ("?" when the runtime does not say), {@code raw} the runtime's own answer.
   */
  record Reply(boolean ok, String text, String by, Object raw) {
    @Override
    public String toString() {
      return String.valueOf(raw);
    }
  }

  /** The jars the scenario deploys: built before the worker starts. */
  record Jars(Path oldA, Path newA, Path fresh) {
    static Jars build(Path tmp) throws Exception {
      Path build = tmp.resolve("build");
      Path out = tmp.resolve("jars");
      return new Jars(
          GeneratedPlugins.jar(
              build, out.resolve("tool-a-old.jar"), "reload.a", "reload.answer", "1.0.0", 8, OLD),
          GeneratedPlugins.jar(
              build, out.resolve("tool-a-new.jar"), "reload.a", "reload.answer", "1.0.0", 8, NEW),
          GeneratedPlugins.jar(
              build,
              out.resolve("tool-fresh.jar"),
              "reload.fresh",
              "reload.fresh",
              "1.0.0",
              8,
              FRESH_ANSWER));
    }
  }

  private ReloadScenario() {}

  /** The plugins folder the worker starts on: a copy of the bundled echo, and tool-a.jar (old). */
  private static Path pluginsFolder(Path tmp, Jars jars) throws Exception {
    Path plugins = Files.createDirectories(tmp.resolve("plugins"));
    GeneratedPlugins.copyBundled("echo", plugins);
    Files.copy(jars.oldA(), plugins.resolve("tool-a.jar"));
    return plugins;
  }

  private static boolean answered(LoadDriver.Rec<Reply> r) {
    return r.outcome() != null && r.outcome().ok();
  }

  private static Reply call(Target rt, String key) {
    return rt.dispatch(key).orTimeout(30, TimeUnit.SECONDS).join();
  }

  /**
   * Runs the scenario in {@code tmp} against {@code rt}, the worker registering as {@code
   * workerId}; {@code name} heads the printed lines.
   */
  static void run(String name, Path tmp, String workerId, Target rt) throws Exception {
    Jars jars = Jars.build(tmp);
    Path plugins = pluginsFolder(tmp, jars);
    try (DistProcess worker =
            DistProcess.start(
                tmp,
                Map.of("PHRONY_RUNTIME_ADDR", rt.address()),
                "run",
                "--plugins",
                plugins.toString(),
                "--http",
                "127.0.0.1:0",
                "--state-dir",
                tmp.resolve("state").toString(),
                "--worker-id",
                workerId,
                "--drain-timeout",
                "30s");
        LoadDriver<Reply> load =
            new LoadDriver<>(name + "-load", 8, List.of(ECHO, ANSWER), rt::dispatch)) {
      worker.until("registered as " + workerId, () -> rt.connected(workerId), DistProcess.DEADLINE);
      int port = worker.httpPort();
      JsonNode before = WorkerOps.handlers(port);
      int generation0 = before.path("generation").asInt();
      assertThat(WorkerOps.keys(before))
          .as("/handlers at start: %s", before)
          .containsExactlyInAnyOrder(ECHO, ANSWER);
      Reply first = call(rt, ANSWER);
      assertThat(first.ok()).as("%s; worker stderr:%n%s", first, worker.stderr()).isTrue();
      assertThat(first.text()).isEqualTo(OLD);

      load.start();
      Await.until("load running", () -> load.done().size() >= 50, Duration.ofSeconds(20));

      // (a) A new jar, moved in atomically: its key is served within 2 s. Latencies of a real
      // process are measured on the wall clock, the clock the promise is made in, as the load's
      // records are.
      GeneratedPlugins.deployAtomically(jars.fresh(), plugins, "tool-fresh.jar");
      long movedAt = System.nanoTime(); // wall clock: see above
      List<LoadDriver.Rec<Reply>> probes;
      try (LoadDriver<Reply> prober =
          new LoadDriver<>(name + "-probe", 1, List.of(FRESH), rt::dispatch).start()) {
        worker.until(
            "a call of " + FRESH + " answered",
            () -> prober.done().stream().anyMatch(ReloadScenario::answered),
            Duration.ofSeconds(15));
        probes = prober.stop(Duration.ofSeconds(30));
      }
      long servedMs =
          (probes.stream()
                      .filter(ReloadScenario::answered)
                      .mapToLong(LoadDriver.Rec::doneNanos)
                      .min()
                      .orElseThrow()
                  - movedAt)
              / 1_000_000;
      WorkerOps.report(
          "%s: copy -> served %d ms (%d probe dispatches)%n", name, servedMs, probes.size());
      assertThat(servedMs)
          .as(
              "ms from the atomic move of tool-fresh.jar to its first result;"
                  + " runtime:%s%nworker stderr:%n%s",
              rt.describe(), worker.stderr())
          .isBetween(0L, SERVED_WITHIN.toMillis());
      for (LoadDriver.Rec<Reply> probe : probes) {
        assertThat(answered(probe)).as("probe %s", probe).isTrue();
        assertThat(probe.outcome().text()).isEqualTo(FRESH_ANSWER);
      }
      JsonNode afterA = WorkerOps.handlers(port);
      int generationA = afterA.path("generation").asInt();
      assertThat(generationA)
          .as("generation after a key was added: %s", afterA)
          .isGreaterThan(1)
          .isGreaterThan(generation0);
      assertThat(WorkerOps.keys(afterA)).containsExactlyInAnyOrder(ECHO, ANSWER, FRESH);
      assertThat(rt.connected(workerId + ".g" + generationA))
          .as("%s.g%d connected; runtime:%s", workerId, generationA, rt.describe())
          .isTrue();
      load.add(FRESH);

      // (b) tool-a.jar replaced by new code with the same descriptor: the new code answers,
      // and nothing goes on the wire (no register on any stream).
      long registersBefore = rt.registers();
      GeneratedPlugins.deployAtomically(jars.newA(), plugins, "tool-a.jar");
      long replacedAt = System.nanoTime(); // wall clock: the promises below count from here
      AtomicLong firstNewAt = new AtomicLong(-1);
      // When the worker's log first showed the replacement's reload (wall clock, reported).
      AtomicLong reloadSeenAt = new AtomicLong(-1);
      worker.until(
          "the new code of tool-a.jar answers",
          () -> {
            if (reloadSeenAt.get() < 0 && WorkerOps.reloadLines(worker.stderr()).size() >= 2) {
              reloadSeenAt.set(System.nanoTime()); // wall clock: reported
            }
            if (call(rt, ANSWER).text().equals(NEW)) {
              firstNewAt.set(System.nanoTime()); // wall clock: reported
              return true;
            }
            return false;
          },
          Duration.ofSeconds(15));
      WorkerOps.report(
          "%s: replace -> first new answer %d ms (reload logged by %d ms)%n",
          name,
          (firstNewAt.get() - replacedAt) / 1_000_000,
          reloadSeenAt.get() < 0 ? -1 : (reloadSeenAt.get() - replacedAt) / 1_000_000);
      // The promise is about the time after one lease TTL of the wall clock from the
      // replacement (the runtime's lease, a real process's heartbeats): that time passing is
      // what is waited for, not a guess at how long something takes.
      Await.until(
          "one lease TTL since the replacement",
          () -> System.nanoTime() - replacedAt >= TTL.toNanos(),
          TTL.plusSeconds(1));
      List<CompletableFuture<Reply>> handful = new ArrayList<>();
      for (int i = 0; i < 12; i++) {
        handful.add(rt.dispatch(ANSWER));
      }
      for (CompletableFuture<Reply> f : handful) {
        Reply r = f.get(30, TimeUnit.SECONDS);
        assertThat(r.ok()).as("%s", r).isTrue();
        assertThat(r.text())
            .as("an answer one lease TTL after the replacement: %s", r)
            .isEqualTo(NEW);
      }
      JsonNode afterB = WorkerOps.handlers(port);
      assertThat(afterB.path("generation").asInt())
          .as("same descriptor, same generation: %s", afterB)
          .isEqualTo(generationA);
      assertThat(rt.registers())
          .as("registers sent since the code-only replacement; runtime:%s", rt.describe())
          .isEqualTo(registersBefore);

      // (c) tool-fresh.jar removed: within a lease TTL + 1 s /handlers no longer lists it, and
      // soon after the runtime no longer routes a call of it.
      load.remove(FRESH);
      Files.delete(plugins.resolve("tool-fresh.jar"));
      long removedAt = System.nanoTime(); // wall clock: the promises below count from here
      Await.until(
          "GET /handlers without " + FRESH,
          () -> !WorkerOps.keysNow(port).contains(FRESH),
          TTL.plusSeconds(1));
      WorkerOps.report(
          "%s: remove -> gone from /handlers %d ms%n", name, WorkerOps.millisSince(removedAt));
      JsonNode afterC = WorkerOps.handlers(port);
      assertThat(WorkerOps.keys(afterC)).as("%s", afterC).containsExactlyInAnyOrder(ECHO, ANSWER);
      assertThat(afterC.path("generation").asInt()).isGreaterThan(generationA);
      assertThat(afterC.path("problems")).as("%s", afterC).isEmpty();
      JsonNode again = WorkerOps.reload(port);
      assertThat(again.path("outcome").asText())
          .as("POST /plugins/reload: %s", again)
          .isEqualTo("unchanged");
      // Out of routing within the runtime's bound of the wall clock after the removal.
      worker.until(
          FRESH + " out of routing",
          () -> !rt.routes(FRESH),
          rt.outOfRoutingWithin().minus(Duration.ofNanos(System.nanoTime() - removedAt)));
      WorkerOps.report(
          "%s: remove -> out of routing %d ms%s%n",
          name, WorkerOps.millisSince(removedAt), rt.lastRoute());
      // The earlier generations' streams close once idle (their leases lapsed long ago).
      String newest = workerId + ".g" + afterC.path("generation").asInt();
      Await.until(
          "only the newest generation's stream (" + newest + ") open; runtime:" + rt.describe(),
          () -> rt.onlyOpen(newest),
          TTL.plusSeconds(5));

      List<LoadDriver.Rec<Reply>> recs = load.stop(Duration.ofSeconds(30));
      WorkerOps.report("%s: load %d calls %s%n", name, recs.size(), LoadDriver.perKey(recs));
      assertThat(LoadDriver.first(recs, r -> !answered(r), 20))
          .as(
              "calls of the load without a result (of %d); worker stderr:%n%s%nruntime:%s",
              recs.size(), worker.stderr(), rt.describe())
          .isEmpty();
      long ttlAfterReplace = replacedAt + TTL.toNanos();
      assertThat(
              LoadDriver.first(
                  recs,
                  r ->
                      r.key().equals(ANSWER)
                          && r.sentNanos() >= ttlAfterReplace
                          && !r.outcome().text().equals(NEW),
                  20))
          .as(
              "load calls of %s sent a lease TTL after the replacement, not answered %s",
              ANSWER, NEW)
          .isEmpty();
      reportOldAfterReload(name, recs, reloadSeenAt.get(), replacedAt);
      assertThat(recs.stream().filter(r -> r.key().equals(FRESH)).count())
          .as("load calls of %s", FRESH)
          .isPositive();

      String err = worker.stderr();
      List<String> reloads = WorkerOps.reloadLines(err);
      WorkerOps.report("%s: reload lines:%n  %s%n", name, String.join("\n  ", reloads));
      assertThat(err).contains("plugins_reloaded");
      assertThat(reloads).as("one line per reload").hasSize(3);
      assertThat(reloads.get(0)).contains("added=" + FRESH, "generation=" + generationA);
      assertThat(reloads.get(1)).contains("replaced=" + ANSWER, "generation=" + generationA);
      assertThat(reloads.get(2))
          .contains("removed=" + FRESH, "generation=" + afterC.path("generation").asInt());

      worker.terminate();
      DistProcess.Result exit = worker.awaitExit(Duration.ofSeconds(30));
      assertThat(exit.exit()).as("exit status; stderr:%n%s", exit.err()).isZero();
      assertThat(exit.err()).contains("drained");
    }
  }

  /** Which worker still answered with the old code once the reload was logged. */
  private static void reportOldAfterReload(
      String name, List<LoadDriver.Rec<Reply>> recs, long reloadedAt, long replacedAt) {
    Map<String, Long> oldAfterReload = new TreeMap<>();
    long lastOldMs = -1;
    for (LoadDriver.Rec<Reply> r : recs) {
      if (reloadedAt > 0
          && r.key().equals(ANSWER)
          && r.sentNanos() > reloadedAt
          && r.outcome().text().equals(OLD)) {
        oldAfterReload.merge(r.outcome().by(), 1L, Long::sum);
        lastOldMs = Math.max(lastOldMs, (r.sentNanos() - replacedAt) / 1_000_000);
      }
    }
    WorkerOps.report(
        "%s: old answers to load calls sent after the code-only reload was logged,"
            + " by worker: %s; last one sent %d ms after the replacement%n",
        name, oldAfterReload, lastOldMs);
  }
}
