package dev.phrony.worker.bench;

import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.realrt.RealRuntime;
import dev.phrony.worker.testkit.realrt.RealRuntime.ToolCall;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * Rows 8a-8c (step {@code realrt}): the host and a peer worker binary ({@code --peer-bin},
 * testworker's flags) on a runtime binary ({@code --runtime-bin}, realrt's flags and control API),
 * loaded by the runtime's own {@code /dispatch-batch}. Each worker has a runtime process of its
 * own, started alike, so each is the only worker its runtime has while it is measured, and neither
 * has to be restarted between turns: a fresh host needs some 250 000 calls before its JIT is done,
 * and the runtime has no call that unregisters a worker. An idle pair costs nothing but a heartbeat
 * every 15 s (the JSON report has its CPU). Paired as rows 2c/2d are: a first round that only warms
 * up, then slices in which each worker is warmed up again and measured, in an order that alternates
 * from slice to slice.
 */
final class RealRuntimeRows implements Scenario {
  private static final Duration FIRST_ROUND = Duration.ofSeconds(2);

  /**
   * One worker on its own runtime process: the pids whose CPU is counted, the rate of its last
   * batch (which sizes the next batch to a duration) and its measured slices.
   */
  private static final class Side {
    final String name;
    final RealRuntime runtime;
    long workerPid;
    double rate = Double.NaN;
    final List<Slice> slices = new ArrayList<>();

    Side(String name, RealRuntime runtime, long workerPid) {
      this.name = name;
      this.runtime = runtime;
      this.workerPid = workerPid;
    }
  }

  /**
   * One measured {@code /dispatch-batch}: the runtime's figures, and the CPU (ns) the worker and
   * its runtime used over it, and what the other pair (idle) used meanwhile.
   */
  private record Slice(
      RealRuntime.Batch batch, long workerCpu, long runtimeCpu, long idleCpu, long wallNanos) {}

  private Sitting s;
  private int batches;

  @Override
  public void run(Sitting sitting) throws Exception {
    this.s = sitting;
    Options o = s.options();
    for (Path bin : List.of(o.runtimeBin(), o.peerBin())) {
      if (!Files.isRegularFile(bin) || !Files.isExecutable(bin)) {
        throw new IllegalArgumentException(bin + " is not an executable file");
      }
    }
    Report report = s.report();
    report.meta.put("runtime_bin", o.runtimeBin().toString());
    report.meta.put("peer_bin", o.peerBin().toString());
    try (RealRuntime hostRt = startRuntime(s, "realrt-host.log");
        RealRuntime peerRt = startRuntime(s, "realrt-peer.log");
        HostProcess host = startHost(s, hostRt, hostRt.target(), "host-realrt")) {
      Side h = new Side("host", hostRt, host.pid());
      BinaryProcess peer = startPeer(s, peerRt, peerRt.target(), "peer-noop", true);
      try {
        Side p = new Side("peer", peerRt, peer.pid());
        ToolCall noop = echo("s-bench-rt-noop", Calls.ARGS);
        // The JIT's work goes by calls: a fresh host first serves as many as row 7's does.
        long[] warmed = warmUp(h, p, noop, ReloadRows.WARMUP_CALLS);
        report.meta.put("realrt_host_warmup", Map.of("calls", warmed[0], "s", warmed[1] / 1e9));
        warmUp(p, h, noop, 0);
        row("8a", "real runtime: no-op (echo), concurrency 1", h, p, noop, 1, "c1", 1.0);
        row("8b", "real runtime: no-op (echo), concurrency 64", h, p, noop, 64, "c64", 1.1);
        // testworker --noop ignores its arguments; the sleeping row needs one without it
        peer.close();
        Await.until(
            "the noop peer gone from the runtime",
            () -> peerRt.hasWorkers(Calls.ECHO_KEY, 0),
            Hosts.START_TIMEOUT);
        peer = startPeer(s, peerRt, peerRt.target(), "peer-sleep", false);
        p.workerPid = peer.pid();
        ToolCall sleep = echo("s-bench-rt-s64", Calls.sleep(50));
        row("8c", "real runtime: 50 ms handler, concurrency 64", h, p, sleep, 64, "s64", 0.98);
      } finally {
        peer.close();
      }
    }
  }

  /**
   * The {@code --runtime-bin} runtime as rows 8a-8d run it, once its control API answers: no ledger
   * ({@code --recorder none}) and a 30 s lease, its output in {@code log} of the work folder.
   */
  static RealRuntime startRuntime(Sitting s, String log) throws Exception {
    return RealRuntime.start(
        s.options().runtimeBin(),
        s.work().resolve(log),
        Hosts.START_TIMEOUT,
        "--recorder",
        "none",
        "--lease-ttl",
        "30s");
  }

  /** A {@code /dispatch-batch} template: one {@code read_only} call of echo with {@code args}. */
  static ToolCall echo(String session, byte[] args) {
    return ToolCall.of(session, Calls.ECHO_KEY, new String(args, StandardCharsets.UTF_8))
        .withSideEffectClass("read_only");
  }

  /**
   * A host on {@code rt} dialling {@code addr} ({@code rt} or a relay in front of it), echo with 64
   * slots, once {@code rt} has it.
   */
  static HostProcess startHost(Sitting s, RealRuntime rt, String addr, String name)
      throws Exception {
    return startHost(s.hosts(), rt, addr, name);
  }

  /**
   * As {@link #startHost(Sitting, RealRuntime, String, String)}, from {@code hosts}' distribution.
   */
  static HostProcess startHost(Hosts hosts, RealRuntime rt, String addr, String name)
      throws Exception {
    return hosts.start(
        addr,
        name,
        List.of(),
        List.of("--drain-timeout", "1s", "--handler", Calls.ECHO_KEY + ":max-concurrency=64"),
        id -> rt.hasWorkers(Calls.ECHO_KEY, 1));
  }

  /** The {@code --peer-bin} worker on {@code rt}, dialling {@code addr}, once {@code rt} has it. */
  static BinaryProcess startPeer(Sitting s, RealRuntime rt, String addr, String id, boolean noop)
      throws Exception {
    return s.hosts().startPeerBin(s.options().peerBin(), rt, addr, id, noop);
  }

  /**
   * {@code side} at concurrency 64 for at least the warm-up and until it has served {@code calls}
   * (at most 20 s); returns the calls and the nanoseconds.
   */
  private long[] warmUp(Side side, Side idle, ToolCall template, long calls) throws Exception {
    long t0 = System.nanoTime();
    long served = 0;
    long elapsed;
    do {
      served += batch(side, idle, template, 64, Duration.ofSeconds(1), "warm").batch().ok();
      elapsed = System.nanoTime() - t0;
    } while (elapsed < TimeUnit.SECONDS.toNanos(20)
        && (served < calls || elapsed < s.warmup().toNanos()));
    return new long[] {served, elapsed};
  }

  private void row(
      String id,
      String scenario,
      Side h,
      Side p,
      ToolCall template,
      int concurrency,
      String tag,
      double goal)
      throws Exception {
    int slices = s.options().slices();
    Duration slice = s.measure().dividedBy(slices);
    Duration rewarm = s.options().rewarm();
    Duration first = FIRST_ROUND.compareTo(s.warmup()) < 0 ? FIRST_ROUND : s.warmup();
    List<Side> sides = List.of(h, p);
    for (Side x : sides) {
      x.rate = Double.NaN; // a new load: the first batch is small, the next ones sized by rate
      x.slices.clear();
    }
    for (Side x : sides) {
      load(x, other(x, sides), template, concurrency, first, tag + "-w");
    }
    for (int i = 0; i < slices; i++) {
      for (int k = 0; k < sides.size(); k++) {
        Side x = sides.get((i + k) % sides.size());
        load(x, other(x, sides), template, concurrency, rewarm, tag + "-w");
        x.slices.add(batch(x, other(x, sides), template, concurrency, slice, tag));
      }
    }
    List<Double> ratios = Stats.ratios(rates(h), rates(p));
    double ratio = Stats.median(ratios);
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("concurrency", concurrency);
    f.put("host", figures(h));
    f.put("peer", figures(p));
    f.put("ratio", ratio);
    f.put("slice_ratios", ratios);
    s.report()
        .add(
            new Report.Row(
                id,
                scenario,
                line("host", h) + "; " + line("peer", p),
                String.format(Locale.ROOT, "host %.2fx peer%s", ratio, Format.spread(ratios)),
                String.format(Locale.ROOT, ">= %.2fx", goal),
                Double.isNaN(ratio) ? null : ratio >= goal,
                f));
  }

  private static Side other(Side x, List<Side> sides) {
    return sides.get(0) == x ? sides.get(1) : sides.get(0);
  }

  private static List<Double> rates(Side x) {
    return x.slices.stream().map(b -> b.batch().perSecond()).toList();
  }

  /**
   * {@code duration} in equal batches of at most 1 s, nothing counted. Equal: a short last batch
   * would leave a rate that its start and end weigh on, and the next batch is sized by it.
   */
  private void load(
      Side side, Side idle, ToolCall template, int concurrency, Duration duration, String tag)
      throws Exception {
    long n =
        Math.max(
            1,
            (duration.toNanos() + TimeUnit.SECONDS.toNanos(1) - 1) / TimeUnit.SECONDS.toNanos(1));
    for (long i = 0; i < n && !duration.isZero(); i++) {
      batch(side, idle, template, concurrency, duration.dividedBy(n), tag);
    }
  }

  /**
   * One {@code /dispatch-batch} of about {@code duration} at the side's last rate (a whole number
   * of rounds of {@code concurrency}; 10 rounds when there is no rate yet), a call id prefix of its
   * own, and the CPU of all four processes around it.
   */
  private Slice batch(
      Side side, Side idle, ToolCall template, int concurrency, Duration duration, String tag)
      throws Exception {
    long rounds =
        Double.isNaN(side.rate)
            ? 10
            : Math.max(1, (long) Math.ceil(side.rate * duration.toNanos() / 1e9 / concurrency));
    long count = rounds * concurrency;
    String prefix = String.format(Locale.ROOT, "rt-%s-%s-%d-", tag, side.name, ++batches);
    Duration timeout = Duration.ofSeconds(60).plus(duration.multipliedBy(10));
    long[] before = cpu(side, idle);
    long t0 = System.nanoTime();
    RealRuntime.Batch b = side.runtime.dispatchBatch(template, count, concurrency, prefix, timeout);
    long wall = System.nanoTime() - t0;
    long[] after = cpu(side, idle);
    if (b.ok() > 0 && b.elapsedMs() > 0 && (Double.isNaN(side.rate) || b.elapsedMs() >= 100)) {
      side.rate = b.perSecond();
    }
    boolean known =
        Arrays.stream(before).allMatch(v -> v >= 0) && Arrays.stream(after).allMatch(v -> v >= 0);
    return new Slice(
        b,
        known ? after[0] - before[0] : -1,
        known ? after[1] - before[1] : -1,
        known ? after[2] + after[3] - before[2] - before[3] : -1,
        wall);
  }

  /** CPU (ns) of the side's worker, its runtime, the idle worker and its runtime. */
  private static long[] cpu(Side side, Side idle) {
    return new long[] {
      Proc.cpuNanos(side.workerPid),
      Proc.cpuNanos(side.runtime.pid()),
      Proc.cpuNanos(idle.workerPid),
      Proc.cpuNanos(idle.runtime.pid())
    };
  }

  /** "N calls/s, CPU/call NAME x + runtime y": the median slice and CPU over all slices. */
  private static String line(String name, Side x) {
    Map<String, Object> f = figures(x);
    long errors = (long) f.get("errors");
    return String.format(
        Locale.ROOT,
        "%s %s calls/s, CPU/call %s %s + runtime %s%s",
        name,
        Format.rate((double) f.get("per_s")),
        name,
        Format.us((double) f.get("worker_cpu_us_per_call")),
        Format.us((double) f.get("runtime_cpu_us_per_call")),
        errors == 0 ? "" : "; " + errors + " errors " + f.get("error_kinds"));
  }

  private static Map<String, Object> figures(Side x) {
    long ok = 0;
    long errors = 0;
    long workerCpu = 0;
    long runtimeCpu = 0;
    long idleCpu = 0;
    long wall = 0;
    boolean known = true;
    Map<String, Long> kinds = new TreeMap<>();
    for (Slice b : x.slices) {
      ok += b.batch().ok();
      errors += b.batch().errors() + b.batch().dispatchErrors();
      b.batch().errorKinds().forEach((k, v) -> kinds.merge(k, v, Long::sum));
      known &= b.workerCpu() >= 0;
      workerCpu += b.workerCpu();
      runtimeCpu += b.runtimeCpu();
      idleCpu += b.idleCpu();
      wall += b.wallNanos();
    }
    List<Double> rates = rates(x);
    return Report.figures(
        "per_s",
        Stats.median(rates),
        "slices_per_s",
        rates,
        "p50_ms",
        Stats.median(x.slices.stream().map(b -> b.batch().p50Ms()).toList()),
        "p99_ms",
        Stats.median(x.slices.stream().map(b -> b.batch().p99Ms()).toList()),
        "calls",
        ok,
        "errors",
        errors,
        "error_kinds",
        kinds,
        "worker_cpu_us_per_call",
        known ? workerCpu / 1e3 / ok : Double.NaN,
        "runtime_cpu_us_per_call",
        known ? runtimeCpu / 1e3 / ok : Double.NaN,
        "idle_pair_cpu_ms_per_s",
        known ? idleCpu / 1e6 / (wall / 1e9) : Double.NaN);
  }
}
