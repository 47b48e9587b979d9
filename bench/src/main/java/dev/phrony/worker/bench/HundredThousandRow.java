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
import java.util.concurrent.TimeoutException;
import java.util.function.LongFunction;
import java.util.stream.Collectors;

/**
 * Row 9 (step {@code inflight}): {@link #CALLS} {@code echo} calls sleeping {@link #HOLD} (a timer
 * each: echo is an AsyncToolHandler) in one host run with {@code -Xmx256m} and {@code
 * max-concurrency=100000}, on a LocalRuntime of its own whose bounds outlast the hold. The live
 * heap (used after a full GC, from {@code GC.heap_info}) idle, with all calls in flight, and after
 * they ended; the host's slots in use from its /metrics.
 */
final class HundredThousandRow implements Scenario {
  /** Calls the row holds at once, each sleeping {@link #HOLD}. */
  static final int CALLS = 100_000;

  static final Duration HOLD = Duration.ofSeconds(60);
  private static final String SLOTS_IN_USE = "phrony_worker_slots_in_use";

  @Override
  public void run(Sitting s) throws Exception {
    int n = CALLS;
    long holdMs = HOLD.toMillis();
    try (LocalRuntime rt =
        LocalRuntime.builder()
            .port(0)
            .queueWait(Duration.ofSeconds(60))
            .executionTimeout(HOLD.plus(Duration.ofMinutes(2)))
            .maxQueuePerKey(n)
            .eventLogCapacity(4096)
            .start()) {
      List<String> hostArgs = new ArrayList<>(Calls.echoSlots(n));
      hostArgs.addAll(List.of("--http", "127.0.0.1:0"));
      try (HostProcess host = s.hosts().start(rt, "host-inflight", List.of("-Xmx256m"), hostArgs)) {
        HostMetrics metrics = new HostMetrics(host);
        String worker = s.hosts().lastWorkerId();
        // Idle: once a few calls have warmed the path up, so its classes count as idle.
        LongFunction<Call> warm = Calls.echo(Calls.ARGS, "inflight-warm");
        for (int i = 0; i < 1000; i++) {
          rt.dispatch(warm.apply(i)).get(30, TimeUnit.SECONDS);
        }
        rt.clearLedger();
        double idleMib = Jcmd.liveHeapMib(host.pid());
        LongFunction<Call> calls = Calls.echo(Calls.sleep(holdMs), "inflight");
        long t0 = System.nanoTime();
        List<CompletableFuture<Outcome>> futures = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          futures.add(rt.dispatch(calls.apply(i)));
        }
        double dispatchedS = (System.nanoTime() - t0) / 1e9;
        double leasedS = Double.NaN;
        Duration leaseWait = HOLD.minusSeconds(10);
        try {
          if (Await.holds(
              () -> {
                if (!host.alive()) {
                  throw new IllegalStateException("host exited with calls in flight");
                }
                return rt.worker(worker).map(w -> w.busy(Calls.ECHO_KEY)).orElse(0) >= n;
              },
              leaseWait)) {
            leasedS = (System.nanoTime() - t0) / 1e9;
          } else {
            System.err.println(
                "bench: inflight: not all " + n + " calls leased within " + leaseWait);
          }
        } catch (IllegalStateException e) {
          System.err.println("bench: inflight: not all " + n + " calls leased: " + e.getMessage());
        }
        // Leased by the runtime is not yet started in the host: measure once the host holds a
        // slot for every call (its own count), well inside the hold.
        if (!Await.holds(
            () -> !host.alive() || metrics.sumOrNaN(SLOTS_IN_USE) >= n,
            Duration.ofSeconds(20),
            Duration.ofMillis(200))) {
          System.err.println(
              "bench: inflight: the host did not hold all "
                  + n
                  + " calls within 20 s; measuring what it holds");
        }
        double slotsPeak = host.alive() ? metrics.sumOrNaN(SLOTS_IN_USE) : Double.NaN;
        long rssAtPeak = Proc.statusKb(host.pid(), "VmRSS");
        double peakMib = host.alive() ? Jcmd.liveHeapMib(host.pid()) : Double.NaN;
        double heldS = (System.nanoTime() - t0) / 1e9;
        long ok = 0;
        long missing = 0;
        String firstError = null;
        long deadline = t0 + HOLD.plus(Duration.ofSeconds(90)).toNanos();
        for (CompletableFuture<Outcome> f : futures) {
          try {
            Outcome o = f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (o instanceof Outcome.Result) {
              ok++;
            } else if (firstError == null) {
              firstError = o.toString();
            }
          } catch (TimeoutException e) {
            missing++;
          }
        }
        double allDoneS = (System.nanoTime() - t0) / 1e9;
        futures.clear();
        rt.clearLedger();
        boolean alive = host.alive();
        double slotsAfter = Double.NaN;
        double afterMib = Double.NaN;
        int runtimeBusyAfter = rt.worker(worker).map(w -> w.busy(Calls.ECHO_KEY)).orElse(-1);
        if (alive) {
          // reported below whether or not they are all free by then
          Await.holds(() -> metrics.sumOrNaN(SLOTS_IN_USE) == 0, Duration.ofSeconds(10));
          slotsAfter = metrics.sumOrNaN(SLOTS_IN_USE);
          afterMib = Jcmd.liveHeapMib(host.pid());
        }
        // What is left, by class (live objects: the histogram runs a full GC first).
        String histogramAfter =
            alive
                ? Jcmd.run(host.pid(), "GC.class_histogram")
                    .lines()
                    .limit(18)
                    .collect(Collectors.joining("\n"))
                : "";
        long hwm = Proc.statusKb(host.pid(), "VmHWM");
        GcLog.Summary gc = GcLog.summary(host.gcLog());
        double perCall = (peakMib - idleMib) * 1024 * 1024 / n;
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("calls", n);
        f.put("ok", ok);
        f.put("not_done", missing);
        f.put("first_error", firstError);
        f.put("hold_ms", holdMs);
        f.put("xmx_mib", 256);
        f.put("dispatched_s", dispatchedS);
        f.put("all_invoked_s", leasedS);
        f.put("measured_at_s", heldS);
        f.put("all_done_s", allDoneS);
        f.put("slots_in_use_in_flight", slotsPeak);
        f.put("live_heap_idle_mib", idleMib);
        f.put("live_heap_in_flight_mib", peakMib);
        f.put("live_heap_after_mib", afterMib);
        f.put("bytes_per_call", perCall);
        f.put("slots_in_use_after", slotsAfter);
        f.put("runtime_busy_after", runtimeBusyAfter);
        f.put("peak_heap_used_mib", gc.maxBeforeMib());
        f.put("gc_pauses", gc.pauses());
        f.put("gc_pause_total_ms", gc.pauseMs());
        f.put("rss_in_flight_mib", rssAtPeak / 1024.0);
        f.put("rss_hwm_mib", hwm / 1024.0);
        f.put("host_alive_after", alive);
        f.put("histogram_after", histogramAfter);
        boolean oom =
            host.stderr().contains("OutOfMemoryError")
                || host.stdout().contains("OutOfMemoryError");
        f.put("out_of_memory", oom);
        // "Near idle": what is left after is under a tenth of what the calls held.
        boolean clean =
            slotsAfter == 0 && afterMib - idleMib <= Math.max(4, (peakMib - idleMib) / 10);
        s.report()
            .add(
                new Report.Row(
                    "9",
                    "host: 100 000 calls in flight, sleeping " + Format.human(HOLD) + " (-Xmx256m)",
                    String.format(
                        Locale.ROOT,
                        "%d/%d ok%s; all invoked in %.1f s (dispatched %.1f s),"
                            + " %s slots in use; live heap idle %.1f MiB, in flight %.1f MiB, after %.1f MiB;"
                            + " %.0f B/call; slots in use after %s; peak used %s MiB, RSS peak %.0f MiB%s",
                        ok,
                        n,
                        missing == 0 ? "" : " (" + missing + " not done)",
                        leasedS,
                        dispatchedS,
                        Double.isNaN(slotsPeak)
                            ? "n/a"
                            : String.format(Locale.ROOT, "%.0f", slotsPeak),
                        idleMib,
                        peakMib,
                        afterMib,
                        perCall,
                        Double.isNaN(slotsAfter)
                            ? "n/a"
                            : String.format(Locale.ROOT, "%.0f", slotsAfter),
                        Format.mib(gc.maxBeforeMib()),
                        hwm / 1024.0,
                        alive ? "" : "; host died" + (oom ? " (OutOfMemoryError)" : "")),
                    String.format(Locale.ROOT, "heap %.0f MiB, %.0f B/call", peakMib, perCall),
                    "heap <= 256 MiB (the -Xmx), nothing left after",
                    ok == n && !Double.isNaN(peakMib) ? peakMib <= 256 && clean : Boolean.FALSE,
                    f));
      }
    }
  }
}
