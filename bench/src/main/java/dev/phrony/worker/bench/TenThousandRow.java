package dev.phrony.worker.bench;

import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongFunction;

/**
 * Row 4 (step {@code 10k}): 10 000 echo calls sleeping at once in a host with {@code -Xmx256m}, on
 * the shared runtime; the live heap from a full GC forced while all are in flight.
 */
final class TenThousandRow implements Scenario {
  @Override
  public void run(Sitting s) throws Exception {
    int n = 10_000;
    int sleepMs = s.quick() ? 3000 : 5000;
    LocalRuntime runtime = s.runtime();
    try (HostProcess host =
        s.hosts().start(runtime, "host-10000", List.of("-Xmx256m"), Calls.echoSlots(n))) {
      LongFunction<Call> calls = Calls.echo(Calls.sleep(sleepMs), "k10");
      long t0 = System.nanoTime();
      List<CompletableFuture<Outcome>> futures = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        futures.add(runtime.dispatch(calls.apply(i)));
      }
      String worker = s.hosts().lastWorkerId();
      Await.until(
          "all " + n + " calls leased",
          () -> runtime.worker(worker).map(w -> w.busy(Calls.ECHO_KEY)).orElse(0) >= n,
          Duration.ofMillis(sleepMs).plus(Duration.ofSeconds(30)));
      double leasedS = (System.nanoTime() - t0) / 1e9;
      // A third into the sleep every call is inside the host: a point in time to look at, not
      // a condition to wait for.
      LockSupport.parkNanos(Duration.ofMillis(sleepMs / 3).toNanos());
      long rssAtPeak = Proc.statusKb(host.pid(), "VmRSS");
      String heapInfo = Jcmd.run(host.pid(), "GC.heap_info");
      Jcmd.run(host.pid(), "GC.run"); // a full GC while all 10 000 are in flight: the live heap
      long ok = 0;
      String firstError = null;
      for (CompletableFuture<Outcome> f : futures) {
        Outcome o = f.get(120, TimeUnit.SECONDS);
        if (o instanceof Outcome.Result) {
          ok++;
        } else if (firstError == null) {
          firstError = o.toString();
        }
      }
      double allDoneS = (System.nanoTime() - t0) / 1e9;
      long hwm = Proc.statusKb(host.pid(), "VmHWM");
      runtime.clearLedger();
      GcLog.Summary gc = GcLog.summary(host.gcLog());
      Map<String, Object> f = new LinkedHashMap<>();
      f.put("calls", n);
      f.put("ok", ok);
      f.put("first_error", firstError);
      f.put("sleep_ms", sleepMs);
      f.put("xmx_mib", 256);
      f.put("all_invoked_s", leasedS);
      f.put("all_done_s", allDoneS);
      f.put("live_heap_mib", gc.systemGcAfterMib());
      f.put("peak_heap_used_mib", gc.maxBeforeMib());
      f.put("max_heap_after_gc_mib", gc.maxAfterMib());
      f.put("gc_pauses", gc.pauses());
      f.put("gc_pause_total_ms", gc.pauseMs());
      f.put("rss_at_peak_mib", rssAtPeak / 1024.0);
      f.put("rss_hwm_mib", hwm / 1024.0);
      f.put("heap_info", heapInfo);
      double live = gc.systemGcAfterMib();
      s.report()
          .add(
              new Report.Row(
                  "4",
                  "host: 10 000 sleeping calls in flight (-Xmx256m)",
                  String.format(
                      Locale.ROOT,
                      "%d/%d ok; all invoked in %.1f s; live heap %s MiB, peak"
                          + " used %s MiB, RSS peak %.0f MiB",
                      ok,
                      n,
                      leasedS,
                      Format.mib(live),
                      Format.mib(gc.maxBeforeMib()),
                      hwm / 1024.0),
                  String.format(
                      Locale.ROOT, "heap %s MiB", Format.mib(Math.max(live, gc.maxAfterMib()))),
                  "heap <= 256 MiB",
                  ok == n && !Double.isNaN(live) ? live <= 256 : null,
                  f));
    }
  }
}
