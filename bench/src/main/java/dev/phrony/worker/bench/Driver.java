package dev.phrony.worker.bench;

import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongFunction;

/**
 * A closed-loop load driver on a {@link LocalRuntime}: {@code concurrency} lanes, each dispatching
 * its next call as soon as the previous one has an outcome. Lanes chain on the dispatch futures (no
 * thread per lane), so the driver costs the machine as little as it can. Calls finishing inside the
 * measurement window (after the warm-up) are counted and timed.
 */
final class Driver {
  /**
   * One figure, from one or more measured slices. {@code hostCpuUsPerCall} is the host process's
   * CPU time (user + system) over the measured windows divided by the calls counted in them: unlike
   * calls/s it barely moves when other processes share the cores. {@code driverCpuUsPerCall} is the
   * same for this JVM (the runtime and the driver). {@code slicesPerSecond} is each slice's own
   * rate, in the order measured: how far a figure moves within one run, against how far it moves
   * between runs.
   */
  record Result(
      double perSecond,
      long ok,
      long errors,
      String firstError,
      double p50Ms,
      double p99Ms,
      double maxMs,
      double hostCpuUsPerCall,
      double driverCpuUsPerCall,
      double hostAllocKibPerCall,
      List<Double> slicesPerSecond) {

    /**
     * "N calls/s, p50, p99, CPU/call host + runtime, alloc/call", and the first error if any: a
     * host row's result.
     */
    String line() {
      return String.format(
          Locale.ROOT,
          "%s calls/s, p50 %s, p99 %s, CPU/call host %s + runtime %s, alloc %s/call%s",
          Format.rate(perSecond),
          Format.ms(p50Ms),
          Format.ms(p99Ms),
          Format.us(hostCpuUsPerCall),
          Format.us(driverCpuUsPerCall),
          Double.isNaN(hostAllocKibPerCall)
              ? "n/a"
              : String.format(Locale.ROOT, "%.1f KiB", hostAllocKibPerCall),
          errors == 0 ? "" : "; " + errors + " errors, first: " + firstError);
    }

    /** The same figures for the JSON report (a row adds its own after them). */
    Map<String, Object> figures() {
      return Report.figures(
          "per_s",
          perSecond,
          "p50_ms",
          p50Ms,
          "p99_ms",
          p99Ms,
          "calls",
          ok,
          "errors",
          errors,
          "first_error",
          firstError,
          "host_cpu_us_per_call",
          hostCpuUsPerCall,
          "driver_cpu_us_per_call",
          driverCpuUsPerCall,
          "host_alloc_kib_per_call",
          hostAllocKibPerCall,
          "slices_per_s",
          slicesPerSecond);
    }

    /** The slices taken together: as if their measured windows were one. */
    static Result of(List<Slice> slices) {
      long ok = 0;
      long errors = 0;
      String firstError = null;
      long measured = 0;
      long hostCpu = 0;
      long driverCpu = 0;
      double allocBytes = 0;
      boolean cpuKnown = true;
      List<Latencies> latencies = new ArrayList<>();
      List<Double> rates = new ArrayList<>(slices.size());
      for (Slice s : slices) {
        rates.add(s.ok() / (s.measuredNanos() / 1e9));
        ok += s.ok();
        errors += s.errors();
        firstError = firstError != null ? firstError : s.firstError();
        measured += s.measuredNanos();
        cpuKnown &= s.hostCpuNanos() >= 0 && s.driverCpuNanos() >= 0;
        hostCpu += s.hostCpuNanos();
        driverCpu += s.driverCpuNanos();
        allocBytes += s.hostAllocBytes();
        latencies.addAll(s.latencies());
      }
      double[] p = Latencies.percentilesMs(latencies, 50, 99, 100);
      return new Result(
          ok / (measured / 1e9),
          ok,
          errors,
          firstError,
          p[0],
          p[1],
          p[2],
          cpuKnown ? hostCpu / 1e3 / ok : Double.NaN,
          cpuKnown ? driverCpu / 1e3 / ok : Double.NaN,
          allocBytes / ok / 1024,
          List.copyOf(rates));
    }
  }

  /** One measured window: raw counts, so that slices add up. CPU is -1 when unknown. */
  record Slice(
      long ok,
      long errors,
      String firstError,
      List<Latencies> latencies,
      long measuredNanos,
      long hostCpuNanos,
      long driverCpuNanos,
      double hostAllocBytes) {}

  private final LocalRuntime runtime;
  private final LongFunction<Call> calls;
  private final long hostPid;
  private final java.nio.file.Path hostGcLog;
  private final AtomicLong seq = new AtomicLong();
  private final AtomicLong errors = new AtomicLong();
  private final AtomicReference<String> firstError = new AtomicReference<>();
  private long from;
  private long until;
  private CountDownLatch lanesDone;

  Driver(LocalRuntime runtime, LongFunction<Call> calls, HostProcess host) {
    this(runtime, calls, host.pid(), host.gcLog());
  }

  /** Drives the worker process {@code pid}; {@code gcLog} (its allocation) may be null. */
  Driver(LocalRuntime runtime, LongFunction<Call> calls, long pid, java.nio.file.Path gcLog) {
    this.runtime = runtime;
    this.calls = calls;
    this.hostPid = pid;
    this.hostGcLog = gcLog;
  }

  Result run(int concurrency, Duration warmup, Duration measure) throws InterruptedException {
    return Result.of(List.of(slice(concurrency, warmup, measure)));
  }

  /** Runs {@code concurrency} lanes for {@code warmup}, then counts for {@code measure}. */
  Slice slice(int concurrency, Duration warmup, Duration measure) throws InterruptedException {
    errors.set(0);
    firstError.set(null);
    List<Lane> lanes = new ArrayList<>(concurrency);
    lanesDone = new CountDownLatch(concurrency);
    long now = System.nanoTime();
    from = now + warmup.toNanos();
    until = from + measure.toNanos();
    for (int i = 0; i < concurrency; i++) {
      lanes.add(new Lane());
    }
    lanes.forEach(Lane::next);
    long deadline = until + TimeUnit.SECONDS.toNanos(60);
    // The runtime's ledger keeps every completed call; empty it as we go (as LocalRuntime says).
    boolean trace = System.getenv("PHRONY_BENCH_TRACE") != null;
    long[] cpu = new long[4]; // host and driver CPU at the window's start and end
    long[] wall = new long[2]; // the window in wall-clock ms, to match the host's GC log
    boolean[] sampled = new boolean[2];
    while (!lanesDone.await(pollNanos(sampled), TimeUnit.NANOSECONDS)) {
      long t = System.nanoTime();
      if (!sampled[0] && t >= from) {
        sampled[0] = true;
        wall[0] = System.currentTimeMillis();
        cpu[0] = Proc.cpuNanos(hostPid);
        cpu[1] = Proc.cpuNanos(ProcessHandle.current().pid());
      }
      if (!sampled[1] && t >= until) {
        sampled[1] = true;
        wall[1] = System.currentTimeMillis();
        cpu[2] = Proc.cpuNanos(hostPid);
        cpu[3] = Proc.cpuNanos(ProcessHandle.current().pid());
      }
      runtime.clearLedger();
      if (trace) {
        System.err.printf(
            Locale.ROOT,
            "bench: trace t=%.1fs in flight %d, queues %s, workers %s%n",
            (System.nanoTime() - now) / 1e9,
            runtime.inFlight(),
            runtime.queues(),
            runtime.workers().stream()
                .map(
                    w ->
                        w.workerId()
                            + " busy "
                            + w.handlers().stream().mapToInt(h -> h.busy()).sum())
                .toList());
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            lanesDone.getCount()
                + " lanes still running 60 s after"
                + " the end of the measurement");
      }
    }
    if (!sampled[1]) { // the lanes all ended before the loop saw the window close
      sampled[1] = sampled[0];
      wall[1] = System.currentTimeMillis();
      cpu[2] = Proc.cpuNanos(hostPid);
      cpu[3] = Proc.cpuNanos(ProcessHandle.current().pid());
    }
    runtime.clearLedger();
    long ok = lanes.stream().mapToLong(l -> l.counted).sum();
    boolean cpuKnown = sampled[1] && cpu[0] >= 0 && cpu[1] >= 0;
    double allocPerSecond = GcLog.allocatedBytesPerSecond(hostGcLog, wall[0], wall[1]);
    return new Slice(
        ok,
        errors.get(),
        firstError.get(),
        lanes.stream().map(l -> l.latencies).toList(),
        measure.toNanos(),
        cpuKnown ? cpu[2] - cpu[0] : -1,
        cpuKnown ? cpu[3] - cpu[1] : -1,
        allocPerSecond * measure.toNanos() / 1e9);
  }

  /** Half a second, or less when a CPU sample point (start or end of the window) comes first. */
  private long pollNanos(boolean[] sampled) {
    long next = !sampled[0] ? from : !sampled[1] ? until : Long.MAX_VALUE;
    long half = TimeUnit.MILLISECONDS.toNanos(500);
    return next == Long.MAX_VALUE ? half : Math.max(0, Math.min(half, next - System.nanoTime()));
  }

  private final class Lane {
    final Latencies latencies = new Latencies();
    long counted;
    long sentAt;

    void next() {
      while (true) {
        sentAt = System.nanoTime();
        CompletableFuture<Outcome> f = runtime.dispatch(calls.apply(seq.incrementAndGet()));
        if (!f.isDone()) {
          f.whenComplete(
              (o, t) -> {
                if (done(o, t)) {
                  next();
                }
              });
          return;
        }
        if (!done(f.getNow(null), null)) {
          return;
        }
      }
    }

    /** Records an outcome; true when the lane goes on. */
    boolean done(Outcome o, Throwable t) {
      long now = System.nanoTime();
      if (o instanceof Outcome.Result) {
        if (now >= from && now < until) {
          counted++;
          latencies.add(now - sentAt);
        }
      } else {
        errors.incrementAndGet();
        firstError.compareAndSet(null, t != null ? t.toString() : String.valueOf(o));
      }
      if (now >= until) {
        lanesDone.countDown();
        return false;
      }
      return true;
    }
  }
}
