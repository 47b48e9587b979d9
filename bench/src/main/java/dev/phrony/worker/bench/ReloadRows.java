package dev.phrony.worker.bench;

import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Event;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongFunction;

/**
 * Rows 7a-7c (step {@code reload}): live plugin reload, on a runtime of its own with a {@link
 * #LEASE} lease, against a host watching a plugins folder that holds the bundled echo plugin.
 *
 * <p>7b: the no-op at concurrency 64 for a fixed window, with a new plugin jar moved in so that its
 * reload falls in the window's middle (a new key: a new generation registers beside the old one,
 * which stops heartbeating and closes once its lease lapses and its calls are done). 7a: the same
 * load without a reload, as long as 7b in two halves, one right before 7b and one once the old
 * stream has closed, so that a machine that drifts moves both alike; first the host warms up by
 * calls served ({@link #warmUp}). 7c: from moving a jar with a new key in to the first call of that
 * key served, each run with a new jar, the next run once the previous hand-over is over.
 */
final class ReloadRows implements Scenario {
  /** The host's settle time (its default): a change to the plugins folder loads after 1 s quiet. */
  static final Duration SETTLE = Duration.ofSeconds(1);

  /** The lease TTL: a generation that stops heartbeating is routed to for 3 s at most. */
  static final Duration LEASE = Duration.ofSeconds(3);

  /** Calls served before a fresh host's figures count: the JIT's work goes by calls, not time. */
  static final long WARMUP_CALLS = 250_000;

  @Override
  public void run(Sitting s) throws Exception {
    // 7a: two halves around 7b, as long as 7b together; 7b: the reload a settle time after the
    // move, mid-window, and the old lease lapsing before the window ends
    Duration half = Duration.ofSeconds(s.quick() ? 2 : 4);
    Duration window = Duration.ofSeconds(s.quick() ? 6 : 8);
    int runs = 3;
    Path work = s.work();
    Path dir = work.resolve("reload");
    // gen-001 for 7b, gen-002... for 7c; compiled outside the watched folder, moved in one by one
    Path staged = Plugins.generate(dir, dir.resolve("staged"), 1 + runs);
    Path plugins = dir.resolve("plugins");
    Plugins.copyTree(s.options().dist().resolve("plugins/echo"), plugins.resolve("echo"));
    Handover handover = new Handover();
    List<String> args = new ArrayList<>(List.of("--plugins", plugins.toString()));
    args.addAll(Calls.echoSlots(64));
    Report report = s.report();
    try (LocalRuntime rt =
            LocalRuntime.builder().port(0).leaseTtl(LEASE).eventLogCapacity(4096).start();
        LocalRuntime.Subscription sub = rt.onEvent(handover::onEvent);
        HostProcess host = s.hosts().start(rt, "host-reload", List.of(), args)) {
      String first = s.hosts().lastWorkerId();
      Driver steadyLoad = new Driver(rt, Calls.echo(Calls.ARGS, "rsteady"), host);
      long[] warmed = warmUp(steadyLoad);
      Driver.Slice before = steadyLoad.slice(64, Duration.ZERO, half);

      // 7b: the move is timed so that the reload (one settle time after it) is mid-window
      long windowStart = System.nanoTime();
      long moveAt = windowStart + window.dividedBy(2).minus(SETTLE).toNanos();
      CompletableFuture<Long> moved = new CompletableFuture<>();
      Thread.ofPlatform()
          .name("bench-reload-move")
          .daemon()
          .start(
              () -> {
                try {
                  for (long left; (left = moveAt - System.nanoTime()) > 0; ) {
                    LockSupport.parkNanos(left); // a point in the window, not a condition
                  }
                  moved.complete(Plugins.moveIn(staged.resolve("gen-001.jar"), plugins));
                } catch (Throwable t) {
                  moved.completeExceptionally(t);
                }
              });
      Driver.Result during =
          new Driver(rt, Calls.echo(Calls.ARGS, "rduring"), host).run(64, Duration.ZERO, window);
      long movedAt = moved.get(30, TimeUnit.SECONDS);
      String second = handover.awaitRegistered(first, movedAt, Duration.ofSeconds(15));
      Long oldEnded = handover.awaitEnded(first, LEASE.plusSeconds(15));
      Driver.Slice afterSlice = steadyLoad.slice(64, Duration.ZERO, half);

      Driver.Result steady = Driver.Result.of(List.of(before, afterSlice));
      Driver.Result pre = Driver.Result.of(List.of(before));
      Driver.Result after = Driver.Result.of(List.of(afterSlice));
      Map<String, Object> fs = steady.figures();
      fs.put("max_ms", steady.maxMs());
      fs.put("before_p99_ms", pre.p99Ms());
      fs.put("after_p99_ms", after.p99Ms());
      fs.put("window_s", 2 * half.toMillis() / 1000.0);
      fs.put("warmup_calls", warmed[0]);
      fs.put("warmup_s", warmed[1] / 1e9);
      fs.put("lease_ttl_s", LEASE.toSeconds());
      report.add(
          new Report.Row(
              "7a",
              "reload: no-op (echo) conc. 64, no reload ("
                  + Format.human(half)
                  + " before 7b + "
                  + Format.human(half)
                  + " after)",
              steady.line()
                  + String.format(
                      Locale.ROOT,
                      ", max %s; before %s calls/s p99 %s, after"
                          + " %s calls/s p99 %s; warm-up %s calls in %.1f s",
                      Format.ms(steady.maxMs()),
                      Format.rate(pre.perSecond()),
                      Format.ms(pre.p99Ms()),
                      Format.rate(after.perSecond()),
                      Format.ms(after.p99Ms()),
                      Format.rate(warmed[0]),
                      warmed[1] / 1e9),
              "p99 " + Format.ms(steady.p99Ms()),
              "reference",
              null,
              fs));

      double ratio = during.p99Ms() / steady.p99Ms();
      long failed = during.errors();
      double movedS = (movedAt - windowStart) / 1e9;
      double registeredS = (handover.registered.get(second) - windowStart) / 1e9;
      double closedS = oldEnded == null ? Double.NaN : (oldEnded - windowStart) / 1e9;
      Map<String, Object> fd = during.figures();
      fd.put("max_ms", during.maxMs());
      fd.put("window_s", window.toMillis() / 1000.0);
      fd.put("p99_ratio_to_steady", ratio);
      fd.put("failed_calls", failed);
      fd.put("moved_at_s", movedS);
      fd.put("new_generation", second);
      fd.put("registered_at_s", registeredS);
      fd.put("old_stream_closed_at_s", closedS);
      fd.put("host_reload_lines", reloadLines(host));
      report.add(
          new Report.Row(
              "7b",
              "reload: the same for " + Format.human(window) + ", a new generation mid-window",
              during.line()
                  + ", max "
                  + Format.ms(during.maxMs())
                  + String.format(
                      Locale.ROOT,
                      "; %d failed calls; jar in at %.1f s, %s registered at %.1f s, old stream closed"
                          + " at %s",
                      failed,
                      movedS,
                      second,
                      registeredS,
                      Double.isNaN(closedS)
                          ? "(not within " + Format.human(LEASE.plusSeconds(15)) + ")"
                          : String.format(Locale.ROOT, "%.1f s", closedS)),
              String.format(Locale.ROOT, "p99 %.2fx 7a, %d failed", ratio, failed),
              "p99 <= 2x 7a, 0 failed",
              Double.isNaN(ratio) ? null : ratio <= 2 && failed == 0,
              fd));
      if (failed > 0 || steady.errors() > 0) {
        System.err.println(
            "bench: reload: failed calls (7a "
                + steady.errors()
                + ", 7b "
                + failed
                + "), first: "
                + (failed > 0 ? during.firstError() : steady.firstError())
                + "; the host's log is "
                + work.resolve("host-reload.err")
                + ", its warnings:");
        host.stderr()
            .lines()
            .filter(
                l -> l.contains("WARN") || l.contains("ERROR") || l.contains("plugins_reloaded"))
            .limit(40)
            .forEach(System.err::println);
      }

      // 7c: a new key, from the move to its first call served; each run a new jar (generation)
      String current = second;
      double[] serve = new double[runs];
      double[] registered = new double[runs];
      double[] handedOver = new double[runs];
      int retries = 0;
      for (int i = 0; i < runs; i++) {
        String tool = String.format(Locale.ROOT, "gen.tool-%03d", i + 2);
        LongFunction<Call> calls = Calls.call(tool, "1.0.0", Calls.ARGS, "read_only", "rnew-" + i);
        long t0 =
            Plugins.moveIn(
                staged.resolve(String.format(Locale.ROOT, "gen-%03d.jar", i + 2)), plugins);
        // A dispatch before the handler is registered waits in the runtime's queue for it (up
        // to its 10 s dispatch wait): a poll that answers the moment the key is served.
        long[] dispatched = {0};
        Outcome[] last = {null};
        boolean served =
            Await.holds(
                () -> {
                  last[0] =
                      rt.dispatch(calls.apply(dispatched[0]++))
                          .orTimeout(30, TimeUnit.SECONDS)
                          .join();
                  return last[0] instanceof Outcome.Result;
                },
                Duration.ofSeconds(20));
        serve[i] = (System.nanoTime() - t0) / 1e9;
        if (!served) {
          throw new IllegalStateException(
              tool
                  + " not served 20 s after its jar was moved in;"
                  + " last outcome "
                  + last[0]
                  + "; host log "
                  + work.resolve("host-reload.err"));
        }
        retries += (int) dispatched[0] - 1;
        String next = handover.awaitRegistered(current, t0, Duration.ofSeconds(15));
        long nextAt = handover.registered.get(next);
        registered[i] = (nextAt - t0) / 1e9;
        // the next run starts once this hand-over is over: one old generation at a time
        Long ended = handover.awaitEnded(current, LEASE.plusSeconds(15));
        handedOver[i] = ended == null ? Double.NaN : (ended - nextAt) / 1e9;
        current = next;
      }
      double median = Stats.median(serve);
      double max = Arrays.stream(serve).max().orElse(Double.NaN);
      report.add(
          new Report.Row(
              "7c",
              "reload: new jar moved in to its first call served (" + runs + " runs)",
              String.format(
                  Locale.ROOT,
                  "median %.2f s, max %.2f s (runs: %s);"
                      + " registered after %.2f s (median), old stream closed %s s after that%s",
                  median,
                  max,
                  Format.seconds(serve),
                  Stats.median(registered),
                  Format.seconds(handedOver),
                  retries == 0 ? "" : "; " + retries + " dispatches not served"),
              String.format(Locale.ROOT, "%.2f s median, %.2f s max", median, max),
              "<= 1.5 s (median; 1 s settle)",
              median <= 1.5,
              Report.figures(
                  "median_s",
                  median,
                  "max_s",
                  max,
                  "runs_s",
                  Arrays.stream(serve).boxed().toList(),
                  "registered_after_s",
                  Arrays.stream(registered).boxed().toList(),
                  "old_closed_after_registered_s",
                  Arrays.stream(handedOver).boxed().toList(),
                  "unserved_dispatches",
                  retries,
                  "lease_ttl_s",
                  LEASE.toSeconds(),
                  "host_reload_lines",
                  reloadLines(host))));
    }
  }

  /**
   * Runs the load in 1 s slices until {@link #WARMUP_CALLS} calls are served (at least 2 s, at most
   * 20 s). A host just started, with a runtime side not yet compiled either (with {@code --only
   * reload}), ran at a fifth to a half of its later calls/s after 3 s here, and warmed up over
   * about 250 000 calls, sooner or later in time as the machine was busy. Returns the calls and the
   * nanoseconds it took.
   */
  private static long[] warmUp(Driver load) throws InterruptedException {
    long t0 = System.nanoTime();
    long calls = 0;
    long elapsed;
    do {
      calls += load.slice(64, Duration.ZERO, Duration.ofSeconds(1)).ok();
      elapsed = System.nanoTime() - t0;
    } while (elapsed < TimeUnit.SECONDS.toNanos(20)
        && (calls < WARMUP_CALLS || elapsed < TimeUnit.SECONDS.toNanos(2)));
    return new long[] {calls, elapsed};
  }

  /** The host's {@code plugins_reloaded} log lines. */
  private static List<String> reloadLines(HostProcess host) {
    return host.stderr().lines().filter(l -> l.contains("plugins_reloaded")).toList();
  }

  /** When each worker id registered and when its stream ended (System.nanoTime()). */
  private static final class Handover {
    final Map<String, Long> registered = new ConcurrentHashMap<>();
    final Map<String, Long> ended = new ConcurrentHashMap<>();

    void onEvent(Event e) {
      if (e.workerId() == null) {
        return;
      }
      if (Event.out(WorkServerMsg.BodyCase.REGISTERED).test(e)) {
        registered.putIfAbsent(e.workerId(), System.nanoTime());
      } else if (e.direction() == Event.Direction.END) {
        ended.putIfAbsent(e.workerId(), System.nanoTime());
      }
    }

    /** The first worker id other than {@code old} registered at or after {@code since}. */
    String awaitRegistered(String old, long since, Duration timeout) {
      String[] found = {null};
      if (!Await.holds(
          () -> {
            registered.forEach(
                (id, at) -> {
                  if (!id.equals(old)
                      && at >= since
                      && (found[0] == null || at < registered.get(found[0]))) {
                    found[0] = id;
                  }
                });
            return found[0] != null;
          },
          timeout)) {
        throw new IllegalStateException(
            "no new plugin generation registered within "
                + timeout
                + " of moving a jar in (still "
                + old
                + ")");
      }
      return found[0];
    }

    /** When {@code id}'s stream ended, waiting up to {@code timeout}; null if it did not. */
    Long awaitEnded(String id, Duration timeout) {
      return Await.holds(() -> ended.containsKey(id), timeout) ? ended.get(id) : null;
    }
  }
}
