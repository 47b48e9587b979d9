package dev.phrony.worker.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Event;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.testkit.WorkerView;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code bin/bench [--quick]}: one sitting, one table. The ceiling is a bare grpc-java stream
 * between this JVM and a child JVM; every host figure is the assembled distribution's
 * {@code bin/phrony-worker run} as a child process, driven by a {@link LocalRuntime} in this JVM.
 * So both sides of every figure are two processes on the same loopback and the same cores.
 *
 * <p>It reports; it does not fail on a slow machine. It exits 1 only when a scenario could not
 * run at all (a broken bench must not rot unnoticed in CI).
 */
public final class Bench {
  /** ~64 bytes of JSON args, the same for the ceiling and the no-op host calls. */
  static final byte[] ARGS = "{\"city\":\"Oslo\",\"days\":3,\"units\":\"metric\",\"lang\":\"en-GB\",\"x\":1}"
      .getBytes(StandardCharsets.UTF_8);
  static final byte[] PAY_ARGS = "{\"amount\":12.5,\"currency\":\"EUR\",\"payee\":\"ACME\"}"
      .getBytes(StandardCharsets.UTF_8);
  static final Duration START_TIMEOUT = Duration.ofSeconds(60);
  /** Paired rows: slices per figure in a full run, and the warm-up again before each slice. */
  static final int PAIRED_SLICES = 5;
  static final Duration SLICE_WARMUP = Duration.ofSeconds(1);

  static final String USAGE = """
      usage: bench [--quick] [--only STEPS] [--dist DIR] [--out FILE.json]
                   [--runtime-bin PATH --peer-bin PATH]
        --quick        small counts, well under a minute (without the reload rows and the
                       100 000-in-flight row unless --only names them)
        --only STEPS   comma-separated: ceiling,64,1000,10k,durable,start,realrt,frames,
                       reload,list,inflight (default: all); c1, c64, s64 run only those rows of step 64
                       (2a/2c, 2b/2d, 3a/3c)
        --runtime-bin PATH  a runtime binary with realrt's flags and HTTP control API, and
        --peer-bin PATH     a worker binary taking testworker's flags: with both, step realrt
                       (rows 8a-8c) runs the host and that worker on that runtime, paired,
                       and step frames (row 8d) counts their HTTP/2 frames per call through
                       a relay; without them both are skipped
        --warmup S     seconds of warm-up before each measured figure (default 5, quick 0.7)
        --measure S    seconds measured per figure (default 10, quick 1.5)
        --dist DIR     the assembled distribution (default: dist/target/dist/phrony-worker)
        --out FILE     the JSON report (default: bench/target/bench-<time>.json)
      bench --probe host|inline|threads [--concurrency N] [--warmup S] [--measure S] [--args JSON]
                       one worker at one concurrency, with its CPU and context switches per call
                       by thread group (and this JVM's: the runtime and the driver)
      bench --outbox [THREADS,...] [SECONDS] [PAYLOAD_BYTES] [DIR]
                       the durable outbox alone (OutboxBench): holds/s, latency, batches, flushes
      PHRONY_BENCH_HOST_OPTS: extra JVM options for every host process (e.g. profiling)""";

  private final boolean quick;
  private final java.util.Set<String> only;
  private final Path dist;
  private final Path work;
  private final Path out;
  private final Duration warmup;
  private final Duration measure;
  /** {@code --runtime-bin} and {@code --peer-bin}: rows 8a-8c run only with both. */
  private Path runtimeBin;
  private Path peerBin;
  private final Report report = new Report();
  private final List<String> failures = new ArrayList<>();
  private LocalRuntime runtime;
  private Ceiling ceiling;
  private int hosts;

  private Bench(boolean quick, Path dist, Path work, Path out, java.util.Set<String> only,
      Duration warm, Duration meas) {
    this.quick = quick;
    this.only = only;
    this.dist = dist;
    this.work = work;
    this.out = out;
    this.warmup = warm != null ? warm : quick ? Duration.ofMillis(700) : Duration.ofSeconds(5);
    this.measure = meas != null ? meas : quick ? Duration.ofMillis(1500) : Duration.ofSeconds(10);
  }

  public static void main(String[] args) throws Exception {
    boolean quick = false;
    java.util.Set<String> only = new java.util.HashSet<>();
    Duration warm = null;
    Duration meas = null;
    Path dist = null;
    Path out = null;
    Path runtimeBin = null;
    Path peerBin = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--quick" -> quick = true;
        case "--dist" -> dist = Path.of(args[++i]);
        case "--out" -> out = Path.of(args[++i]);
        case "--runtime-bin" -> runtimeBin = Path.of(args[++i]);
        case "--peer-bin" -> peerBin = Path.of(args[++i]);
        case "--only" -> only.addAll(Arrays.asList(args[++i].split(",")));
        case "--warmup" -> warm = Duration.ofMillis((long) (Double.parseDouble(args[++i]) * 1000));
        case "--measure" -> meas = Duration.ofMillis((long) (Double.parseDouble(args[++i]) * 1000));
        case "--probe" -> {
          Path home = Path.of(System.getProperty("phrony.home", ".")).toAbsolutePath().normalize();
          Probe.run(home.resolve("dist/target/dist/phrony-worker"),
              home.resolve("bench/target/probe"), args);
          System.exit(0);
        }
        case "--outbox" -> {
          OutboxBench.main(Arrays.copyOfRange(args, i + 1, args.length));
          return;
        }
        case "-h", "--help" -> {
          System.out.println(USAGE);
          return;
        }
        default -> {
          System.err.println("bench: unknown argument " + args[i] + "\n" + USAGE);
          System.exit(1);
        }
      }
    }
    Path home = Path.of(System.getProperty("phrony.home", ".")).toAbsolutePath().normalize();
    if (dist == null) {
      dist = home.resolve("dist/target/dist/phrony-worker");
    }
    if (!Files.isExecutable(dist.resolve("bin/phrony-worker"))) {
      System.err.println("bench: no distribution at " + dist + " (run ./mvnw package first)");
      System.exit(1);
    }
    String stamp = DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss", Locale.ROOT).withZone(ZoneOffset.UTC)
        .format(Instant.now());
    Path target = home.resolve("bench/target");
    if (out == null) {
      out = target.resolve("bench-" + stamp + ".json");
    }
    if ((runtimeBin == null) != (peerBin == null)) {
      System.err.println("bench: --runtime-bin and --peer-bin go together (rows 8a-8c need a"
          + " runtime and a peer worker)\n" + USAGE);
      System.exit(1);
    }
    Bench bench = new Bench(quick, dist, target.resolve("bench-work/" + stamp), out, only, warm,
        meas);
    bench.runtimeBin = runtimeBin;
    bench.peerBin = peerBin;
    int rc = bench.run();
    System.exit(rc);
  }

  private int run() throws Exception {
    Files.createDirectories(work);
    report.meta.put("started", Instant.now().toString());
    report.meta.put("mode", quick ? "quick" : "full");
    report.meta.put("java", System.getProperty("java.vm.name") + " "
        + System.getProperty("java.runtime.version"));
    report.meta.put("cores", Runtime.getRuntime().availableProcessors());
    report.meta.put("loadavg_start", loadavg());
    report.meta.put("warmup_s", warmup.toMillis() / 1000.0);
    report.meta.put("measure_s", measure.toMillis() / 1000.0);
    report.meta.put("distribution", dist.toString());
    System.err.printf(Locale.ROOT, "bench: %s run, warm-up %s, measured %s per figure; load average %s"
        + " (other processes on this machine move absolute figures: compare ratios)%n",
        quick ? "quick" : "full", human(warmup), human(measure), loadavg());

    if (only.contains("c1") || only.contains("c64") || only.contains("s64")) {
      only.add("64-rows");
    }
    try {
      step("ceiling", this::ceiling);
      try (LocalRuntime rt = LocalRuntime.builder().port(0)
          .queueWait(Duration.ofSeconds(60)).eventLogCapacity(4096).start()) {
        runtime = rt;
        step("64", this::hostAt64);
        closeCeiling(); // only rows 1 and 2 use it
        step("1000", this::hostAt1000);
        step("10k", this::tenThousand);
        step("durable", this::durable);
        step("start", this::startup);
      }
      if (runtimeBin != null) {
        step("realrt", this::realRuntime);
        step("frames", this::frames);
      } else if (only.isEmpty() || only.contains("realrt")) {
        System.err.println("bench: real-runtime rows (8a-8d) skipped: they run with"
            + " --runtime-bin PATH --peer-bin PATH");
      }
      if (quick && !only.contains("reload")) {
        // its windows are set by the lease TTL and the settle time, not by counts: ~40 s
        if (only.isEmpty()) {
          System.err.println("bench: reload rows (7a-7c) left out of a --quick run; --quick"
              + " --only reload runs them");
        }
      } else {
        step("reload", this::reload);
      }
      step("list", this::listHandlers);
      if (quick && !only.contains("inflight")) {
        // its hold is 60 s whatever the counts: ~1.5 min
        if (only.isEmpty()) {
          System.err.println("bench: 100 000-in-flight row (9) left out of a --quick run; --quick"
              + " --only inflight runs it");
        }
      } else {
        step("inflight", this::hundredThousand);
      }
    } finally {
      closeCeiling();
    }

    report.meta.put("loadavg_end", loadavg());
    report.meta.put("failures", failures);
    System.out.println();
    System.out.printf(Locale.ROOT, "phrony-worker bench (%s), %s, %d cores, load average %s -> %s%n",
        quick ? "quick" : "full", report.meta.get("java"), Runtime.getRuntime()
            .availableProcessors(), report.meta.get("loadavg_start"), loadavg());
    System.out.println();
    report.print(System.out);
    System.out.println();
    report.writeJson(out);
    System.out.println("written: " + out);
    if (!failures.isEmpty()) {
      System.out.println("scenarios that could not run: " + failures);
      return 1;
    }
    return 0;
  }

  private interface Step {
    void run() throws Exception;
  }

  private void step(String name, Step step) {
    if (!only.isEmpty() && !only.contains(name)
        && !(name.equals("64") && only.contains("64-rows"))) {
      return;
    }
    try {
      step.run();
    } catch (Exception | AssertionError e) {
      failures.add(name + ": " + e);
      System.err.println("bench: " + name + " failed: " + e);
      e.printStackTrace();
      report.add(new Report.Row("!", name, "failed: " + e.getMessage(), "", "", null,
          Map.of("error", String.valueOf(e))));
    }
  }

  // ---------------------------------------------------------------- 1. ceiling

  private void ceiling() throws Exception {
    Ceiling ceiling = ceilingRig();
    addCeilingRow("1a", "ceiling: bare gRPC stream, ping-pong", ceiling.run(1, warmup, measure));
    addCeilingRow("1b", "ceiling: bare gRPC stream, pipelined (64)",
        ceiling.run(64, warmup, measure));
  }

  private void addCeilingRow(String id, String scenario, Ceiling.Run run) {
    report.add(new Report.Row(id, scenario,
        String.format(Locale.ROOT,
            "%s round trips/s, p50 %s, p99 %s, CPU/call client %s + server %s",
            rate(run.perSecond()), ms(run.p50Ms()), ms(run.p99Ms()), us(run.clientCpuUs()),
            us(run.serverCpuUs())),
        "reference", "", null,
        figures("per_s", run.perSecond(), "p50_ms", run.p50Ms(), "p99_ms", run.p99Ms(),
            "client_cpu_us_per_call", run.clientCpuUs(), "server_cpu_us_per_call",
            run.serverCpuUs(), "calls", run.calls())));
  }

  /** The ceiling's server and client, started on first use and kept until the end. */
  private Ceiling ceilingRig() throws Exception {
    if (ceiling == null) {
      ceiling = Ceiling.start(ARGS, work.resolve("ceiling-client.log"), START_TIMEOUT);
    }
    return ceiling;
  }

  private void closeCeiling() throws InterruptedException {
    if (ceiling != null) {
      ceiling.close();
      ceiling = null;
    }
  }

  /**
   * The host, the two stand-in peers and (optionally) the ceiling, measured in alternating
   * slices of the measured time, so a change in what else the machine runs hits all alike; a
   * ratio of figures taken a minute apart moved by 10% from run to run here.
   *
   * <p>A first round only warms up: each for the whole warm-up, nothing counted. Measured, it
   * made the worker that went first pay for the runtime's JVM still compiling its code for this
   * concurrency: that worker's first slice came out 25-45% below its later ones, whichever worker
   * it was. Then each measured round warms each up again for {@link #SLICE_WARMUP} (at most the
   * warm-up) and measures one slice, the ceiling first, the three workers in an order rotated
   * from round to round, so none always follows the ceiling (which runs its server in this JVM
   * too) or the same peer.
   */
  private record Compared(Driver.Result host, double ceiling, Driver.Result inline,
      Driver.Result threads) {}

  private Compared compared(int concurrency, Driver host, Driver inline, Driver threads,
      boolean withCeiling) throws Exception {
    Ceiling c = withCeiling ? ceilingRig() : null;
    int slices = quick ? 1 : PAIRED_SLICES;
    Duration slice = measure.dividedBy(slices);
    Duration rewarm = SLICE_WARMUP.compareTo(warmup) < 0 ? SLICE_WARMUP : warmup;
    List<Driver> workers = List.of(host, inline, threads);
    List<List<Driver.Slice>> measured = List.of(new ArrayList<>(), new ArrayList<>(),
        new ArrayList<>());
    if (c != null) {
      c.run(concurrency, warmup, Duration.ZERO);
    }
    for (Driver w : workers) {
      w.slice(concurrency, warmup, Duration.ZERO);
    }
    double reference = 0;
    for (int i = 0; i < slices; i++) {
      if (c != null) {
        reference += c.run(concurrency, rewarm, slice).perSecond();
      }
      for (int k = 0; k < workers.size(); k++) {
        int w = (i + k) % workers.size();
        measured.get(w).add(workers.get(w).slice(concurrency, rewarm, slice));
      }
    }
    return new Compared(Driver.Result.of(measured.get(0)),
        c == null ? Double.NaN : reference / slices, Driver.Result.of(measured.get(1)),
        Driver.Result.of(measured.get(2)));
  }

  /** Rows comparing the host with each stand-in peer measured beside it. */
  private void addPeerRows(String id, String scenario, Compared c, double goalInline,
      double goalThreads) {
    addPeerRow(id + "-ts", scenario + " vs inline stand-in (TypeScript shape)", c.host(),
        c.inline(), "inline stand-in", goalInline);
    addPeerRow(id + "-go", scenario + " vs thread-per-call stand-in (Go shape)", c.host(),
        c.threads(), "thread-per-call stand-in", goalThreads);
  }

  private void addPeerRow(String id, String scenario, Driver.Result host, Driver.Result peer,
      String peerName, double goal) {
    double ratio = host.perSecond() / peer.perSecond();
    List<Double> sliceRatios = sliceRatios(host, peer);
    Map<String, Object> f = resultFigures(peer);
    f.put("host_per_s", host.perSecond());
    f.put("host_slices_per_s", host.slicesPerSecond());
    f.put("ratio", ratio);
    f.put("slice_ratios", sliceRatios);
    report.add(new Report.Row(id, scenario, "peer: " + callsLine(peer),
        String.format(Locale.ROOT, "host %.2fx %s%s", ratio, peerName, spread(sliceRatios)),
        String.format(Locale.ROOT, ">= %.2fx", goal),
        Double.isNaN(ratio) ? null : ratio >= goal, f));
  }

  // ---------------------------------------------------------------- 2, 3, 5: one host each

  private void hostAt64() throws Exception {
    try (HostProcess host = startHost("host-64", List.of(), echoSlots(64));
        PeerProcess inline = startPeer("inline");
        PeerProcess threads = startPeer("threads")) {
      Driver noop = new Driver(runtime, echo(ARGS, "noop"), host);
      Driver inlineNoop = peerDriver(inline, ARGS, "noop");
      Driver threadsNoop = peerDriver(threads, ARGS, "noop");
      if (row("c1")) {
        Compared c1 = compared(1, noop, inlineNoop, threadsNoop, true);
        addHostRow("2a", "host: no-op (echo), concurrency 1", c1.host(), c1.ceiling(),
            "ping-pong ceiling (paired)", 0.5);
        addPeerRows("2c", "host: no-op, concurrency 1", c1, 0.9, 1.0);
      }
      if (row("c64")) {
        Compared c64 = compared(64, noop, inlineNoop, threadsNoop, true);
        addHostRow("2b", "host: no-op (echo), concurrency 64", c64.host(), c64.ceiling(),
            "pipelined ceiling (paired)", 0.5);
        addPeerRows("2d", "host: no-op, concurrency 64", c64, 1.1, 1.1);
      }
      if (row("s64")) {
        byte[] sleep = "{\"sleep_ms\":50}".getBytes(StandardCharsets.UTF_8);
        Compared s64 = compared(64, new Driver(runtime, echo(sleep, "s64"), host),
            peerDriver(inline, sleep, "s64"), peerDriver(threads, sleep, "s64"), false);
        addHostRow("3a", "host: 50 ms handler, concurrency 64", s64.host(), 64 / 0.05,
            "ideal (64/50 ms)", 0.97);
        addPeerRows("3c", "host: 50 ms handler, concurrency 64", s64, 1.0, 1.0);
      }
    }
  }

  /** Step 64's rows: all, or those {@code --only} names ({@code c1}, {@code c64}, {@code s64}). */
  private boolean row(String name) {
    return only.isEmpty() || only.contains("64") || only.contains(name);
  }

  /** A stand-in peer on this bench's runtime, once it is registered. */
  private PeerProcess startPeer(String shape) throws Exception {
    PeerProcess peer = PeerProcess.start(shape, runtime.target(),
        work.resolve("peer-" + shape + ".log"));
    try {
      Await.until("peer " + shape + " registered", () -> {
        if (!peer.alive()) {
          throw new IllegalStateException("peer " + shape + " exited; see its log in " + work);
        }
        return runtime.worker(peer.workerId).filter(WorkerView::connected).isPresent();
      }, START_TIMEOUT);
    } catch (RuntimeException | AssertionError e) {
      peer.close();
      throw e;
    }
    return peer;
  }

  private Driver peerDriver(PeerProcess peer, byte[] args, String tag) {
    return new Driver(runtime, call("echo", peer.version, args, "read_only",
        peer.shape + "-" + tag), peer.pid(), null);
  }

  private void hostAt1000() throws Exception {
    try (HostProcess host = startHost("host-1000",
        List.of(), echoSlots(1000))) {
      Driver sleepy = new Driver(runtime, echo("{\"sleep_ms\":50}".getBytes(
          StandardCharsets.UTF_8), "s1000"), host);
      Driver.Result s = sleepy.run(1000, warmup, measure);
      addHostRow("3b", "host: 50 ms handler, concurrency 1 000", s, 1000 / 0.05,
          "ideal (1000/50 ms)", 0.9);
    }
  }

  private void addHostRow(String id, String scenario, Driver.Result r, double reference,
      String refName, double goal) {
    double ratio = r.perSecond() / reference;
    Map<String, Object> f = resultFigures(r);
    f.put("reference", refName);
    f.put("reference_per_s", reference);
    f.put("ratio", ratio);
    report.add(new Report.Row(id, scenario, callsLine(r),
        String.format(Locale.ROOT, "%.2fx %s", ratio, refName),
        String.format(Locale.ROOT, ">= %.2fx", goal),
        Double.isNaN(ratio) ? null : ratio >= goal, f));
  }

  // ---------------------------------------------------------------- 4. 10 000 in flight

  private void tenThousand() throws Exception {
    int n = 10_000;
    int sleepMs = quick ? 3000 : 5000;
    try (HostProcess host = startHost("host-10000", List.of("-Xmx256m"), echoSlots(n))) {
      Path gcLog = host.gcLog();
      byte[] args = ("{\"sleep_ms\":" + sleepMs + "}").getBytes(StandardCharsets.UTF_8);
      LongFunction<Call> calls = echo(args, "k10");
      long t0 = System.nanoTime();
      List<CompletableFuture<Outcome>> futures = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        futures.add(runtime.dispatch(calls.apply(i)));
      }
      String worker = "bench-" + hosts;
      Await.until("all " + n + " calls leased", () -> runtime.worker(worker)
          .map(w -> w.busy("echo@default")).orElse(0) >= n,
          Duration.ofMillis(sleepMs).plus(Duration.ofSeconds(30)));
      double leasedS = (System.nanoTime() - t0) / 1e9;
      // Half-way through the sleep every call is inside the host; look at it then.
      LockSupport.parkNanos(Duration.ofMillis(sleepMs / 3).toNanos());
      long rssAtPeak = host.procStatusKb("VmRSS");
      String heapInfo = jcmd(host.pid(), "GC.heap_info");
      jcmd(host.pid(), "GC.run"); // a full GC while all 10 000 are in flight: the live heap
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
      long hwm = host.procStatusKb("VmHWM");
      runtime.clearLedger();
      Gc gc = Gc.parse(gcLog);
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
      report.add(new Report.Row("4", "host: 10 000 sleeping calls in flight (-Xmx256m)",
          String.format(Locale.ROOT, "%d/%d ok; all invoked in %.1f s; live heap %s MiB, peak"
              + " used %s MiB, RSS peak %.0f MiB", ok, n, leasedS, mib(live),
              mib(gc.maxBeforeMib()), hwm / 1024.0),
          String.format(Locale.ROOT, "heap %s MiB", mib(Math.max(live, gc.maxAfterMib()))),
          "heap <= 256 MiB", ok == n && !Double.isNaN(live) ? live <= 256 : null, f));
    }
  }

  // ---------------------------------------------------------------- 9. 100 000 in flight

  /** Calls row 9 holds at once, each sleeping {@link #INFLIGHT_HOLD}. */
  static final int INFLIGHT_CALLS = 100_000;
  static final Duration INFLIGHT_HOLD = Duration.ofSeconds(60);

  /**
   * 100 000 {@code echo} calls sleeping 60 s (a timer each: echo is an AsyncToolHandler) in one
   * host run with {@code -Xmx256m} and {@code max-concurrency=100000}, on a LocalRuntime of its
   * own whose bounds outlast the hold. The live heap (used after a full GC, from
   * {@code GC.heap_info}) idle, with all calls in flight, and after they ended; the host's slots
   * in use from its /metrics.
   */
  private void hundredThousand() throws Exception {
    int n = INFLIGHT_CALLS;
    long holdMs = INFLIGHT_HOLD.toMillis();
    try (LocalRuntime rt = LocalRuntime.builder().port(0).queueWait(Duration.ofSeconds(60))
        .executionTimeout(INFLIGHT_HOLD.plus(Duration.ofMinutes(2))).maxQueuePerKey(n)
        .eventLogCapacity(4096).start()) {
      List<String> hostArgs = new ArrayList<>(echoSlots(n));
      hostArgs.addAll(List.of("--http", "127.0.0.1:0"));
      try (HostProcess host = startHost(rt, "host-inflight", List.of("-Xmx256m"), hostArgs)) {
        int port = httpPort(host);
        String worker = "bench-" + hosts;
        // Idle: once a few calls have warmed the path up, so its classes count as idle.
        LongFunction<Call> warm = echo(ARGS, "inflight-warm");
        for (int i = 0; i < 1000; i++) {
          rt.dispatch(warm.apply(i)).get(30, TimeUnit.SECONDS);
        }
        rt.clearLedger();
        double idleMib = liveHeapMib(host);
        byte[] args = ("{\"sleep_ms\":" + holdMs + "}").getBytes(StandardCharsets.UTF_8);
        LongFunction<Call> calls = echo(args, "inflight");
        long t0 = System.nanoTime();
        List<CompletableFuture<Outcome>> futures = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          futures.add(rt.dispatch(calls.apply(i)));
        }
        double dispatchedS = (System.nanoTime() - t0) / 1e9;
        double leasedS = Double.NaN;
        Duration leaseWait = INFLIGHT_HOLD.minusSeconds(10);
        try {
          if (Await.holds(() -> {
            if (!host.alive()) {
              throw new IllegalStateException("host exited with calls in flight");
            }
            return rt.worker(worker).map(w -> w.busy("echo@default")).orElse(0) >= n;
          }, leaseWait)) {
            leasedS = (System.nanoTime() - t0) / 1e9;
          } else {
            System.err.println("bench: inflight: not all " + n + " calls leased within "
                + leaseWait);
          }
        } catch (IllegalStateException e) {
          System.err.println("bench: inflight: not all " + n + " calls leased: " + e.getMessage());
        }
        // All are leased; give the host a moment to have started the last of them.
        LockSupport.parkNanos(Duration.ofSeconds(2).toNanos());
        double slotsPeak = host.alive() ? slotsInUse(port) : Double.NaN;
        long rssAtPeak = host.procStatusKb("VmRSS");
        double peakMib = host.alive() ? liveHeapMib(host) : Double.NaN;
        double heldS = (System.nanoTime() - t0) / 1e9;
        long ok = 0;
        long missing = 0;
        String firstError = null;
        long deadline = t0 + INFLIGHT_HOLD.plus(Duration.ofSeconds(90)).toNanos();
        for (CompletableFuture<Outcome> f : futures) {
          try {
            Outcome o = f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (o instanceof Outcome.Result) {
              ok++;
            } else if (firstError == null) {
              firstError = o.toString();
            }
          } catch (java.util.concurrent.TimeoutException e) {
            missing++;
          }
        }
        double allDoneS = (System.nanoTime() - t0) / 1e9;
        futures.clear();
        rt.clearLedger();
        boolean alive = host.alive();
        double slotsAfter = Double.NaN;
        double afterMib = Double.NaN;
        int runtimeBusyAfter = rt.worker(worker).map(w -> w.busy("echo@default")).orElse(-1);
        if (alive) {
          Await.holds(() -> slotsInUse(port) == 0, Duration.ofSeconds(10)); // reported below
          slotsAfter = slotsInUse(port);
          afterMib = liveHeapMib(host);
        }
        // What is left, by class (live objects: the histogram runs a full GC first).
        String histogramAfter = alive ? jcmd(host.pid(), "GC.class_histogram").lines().limit(18)
            .collect(java.util.stream.Collectors.joining("\n")) : "";
        long hwm = host.procStatusKb("VmHWM");
        Gc gc = Gc.parse(host.gcLog());
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
        boolean oom = host.stderr().contains("OutOfMemoryError")
            || host.stdout().contains("OutOfMemoryError");
        f.put("out_of_memory", oom);
        // "Near idle": what is left after is under a tenth of what the calls held.
        boolean clean = slotsAfter == 0
            && afterMib - idleMib <= Math.max(4, (peakMib - idleMib) / 10);
        report.add(new Report.Row("9", "host: 100 000 calls in flight, sleeping "
            + human(INFLIGHT_HOLD) + " (-Xmx256m)",
            String.format(Locale.ROOT, "%d/%d ok%s; all invoked in %.1f s (dispatched %.1f s),"
                + " %s slots in use; live heap idle %.1f MiB, in flight %.1f MiB, after %.1f MiB;"
                + " %.0f B/call; slots in use after %s; peak used %s MiB, RSS peak %.0f MiB%s",
                ok, n, missing == 0 ? "" : " (" + missing + " not done)", leasedS, dispatchedS,
                Double.isNaN(slotsPeak) ? "n/a" : String.format(Locale.ROOT, "%.0f", slotsPeak),
                idleMib, peakMib, afterMib, perCall,
                Double.isNaN(slotsAfter) ? "n/a" : String.format(Locale.ROOT, "%.0f", slotsAfter),
                mib(gc.maxBeforeMib()), hwm / 1024.0,
                alive ? "" : "; host died" + (oom ? " (OutOfMemoryError)" : "")),
            String.format(Locale.ROOT, "heap %.0f MiB, %.0f B/call", peakMib, perCall),
            "heap <= 256 MiB (the -Xmx), nothing left after",
            ok == n && !Double.isNaN(peakMib) ? peakMib <= 256 && clean : Boolean.FALSE, f));
      }
    }
  }

  private static final Pattern HEAP_USED = Pattern.compile("heap\\s+total\\b[^\\n]*?used (\\d+)K");

  /** A full GC in {@code host} ({@code jcmd GC.run}), then its heap used, MiB; NaN if unknown. */
  private static double liveHeapMib(HostProcess host) {
    jcmd(host.pid(), "GC.run");
    Matcher m = HEAP_USED.matcher(jcmd(host.pid(), "GC.heap_info"));
    return m.find() ? Long.parseLong(m.group(1)) / 1024.0 : Double.NaN;
  }

  /** {@code phrony_worker_slots_in_use} over all tools, from the host's /metrics. */
  private static double slotsInUse(int port) {
    try {
      var client = java.net.http.HttpClient.newHttpClient();
      String text = client.send(java.net.http.HttpRequest.newBuilder(
              java.net.URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
          java.net.http.HttpResponse.BodyHandlers.ofString()).body();
      double sum = 0;
      for (String line : text.lines().toList()) {
        if (line.startsWith("phrony_worker_slots_in_use{")
            || line.startsWith("phrony_worker_slots_in_use ")) {
          sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
        }
      }
      return sum;
    } catch (IOException e) {
      return Double.NaN;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Double.NaN;
    }
  }

  /** What the host's GC log says (unified logging, -Xlog:gc). */
  record Gc(double maxBeforeMib, double maxAfterMib, double systemGcAfterMib, int pauses,
      double pauseMs) {
    private static final Pattern LINE = Pattern.compile(
        "(\\d+)([KMG])->(\\d+)([KMG])\\((\\d+)([KMG])\\)\\s+([\\d.]+)ms");

    static Gc parse(Path log) throws IOException {
      double before = Double.NaN;
      double after = Double.NaN;
      double system = Double.NaN;
      int pauses = 0;
      double ms = 0;
      if (!Files.exists(log)) {
        return new Gc(before, after, system, 0, 0);
      }
      for (String line : Files.readAllLines(log)) {
        Matcher m = LINE.matcher(line);
        if (!m.find()) {
          continue;
        }
        double b = mib(m.group(1), m.group(2));
        double a = mib(m.group(3), m.group(4));
        before = Double.isNaN(before) ? b : Math.max(before, b);
        after = Double.isNaN(after) ? a : Math.max(after, a);
        if (line.contains("Diagnostic Command") || line.contains("System.gc()")) {
          system = a;
        }
        if (line.contains("Pause")) {
          pauses++;
          ms += Double.parseDouble(m.group(7));
        }
      }
      return new Gc(before, after, system, pauses, ms);
    }

    private static double mib(String n, String unit) {
      double v = Double.parseDouble(n);
      return switch (unit) {
        case "K" -> v / 1024;
        case "G" -> v * 1024;
        default -> v;
      };
    }
  }

  private static String jcmd(long pid, String command) {
    Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
    if (!Files.isExecutable(jcmd)) {
      return "(no jcmd in this JDK)";
    }
    try {
      Process p = new ProcessBuilder(jcmd.toString(), Long.toString(pid), command)
          .redirectErrorStream(true).start();
      String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      p.waitFor(30, TimeUnit.SECONDS);
      return text.strip();
    } catch (IOException | InterruptedException e) {
      return "(jcmd failed: " + e + ")";
    }
  }

  // ---------------------------------------------------------------- 5. durable path

  /**
   * payments.process-payment (non_idempotent_write, max_concurrency 16) with its results held in
   * memory only ({@code --durability none}), then on disk before they are sent (the default,
   * {@code --durability writes}).
   */
  private void durable() throws Exception {
    // The disk alone first, on the file system the hosts' state dirs are on.
    DiskCeiling.Run disk;
    try (DiskCeiling ceiling = new DiskCeiling(work.resolve("disk-ceiling"))) {
      disk = ceiling.run(16, warmup, measure);
    }
    // Concurrency 64 needs 64 slots: an operator's override, as in production.
    List<String> wide = List.of("--handler", "payments.process-payment@1.0.0:max-concurrency=64");
    Driver.Result memory;
    try (HostProcess host = startHost("host-memory", List.of(),
        List.of("--durability", "none"))) {
      memory = new Driver(runtime, call("payments.process-payment", "1.0.0", PAY_ARGS,
          "non_idempotent_write", "mpay"), host).run(16, warmup, measure);
      report.add(new Report.Row("5a", "host: payments, --durability none, concurrency 16",
          callsLine(memory), String.format(Locale.ROOT, "%s calls/s", rate(memory.perSecond())),
          "", null, resultFigures(memory)));
    }
    List<String> durableArgs = new ArrayList<>(List.of("--durability", "writes", "--http",
        "127.0.0.1:0"));
    durableArgs.addAll(wide);
    try (HostProcess host = startHost("host-durable", List.of(), durableArgs)) {
      int port = httpPort(host);
      Driver.Result p = new Driver(runtime, call("payments.process-payment", "1.0.0", PAY_ARGS,
          "non_idempotent_write", "dpay"), host).run(16, warmup, measure);
      double perCall16 = flushesPerCall(port);
      Map<String, Object> f = resultFigures(p);
      double ratio = p.perSecond() / memory.perSecond();
      double toDisk = p.perSecond() / disk.perSecond();
      f.put("ratio_to_memory", ratio);
      f.put("ratio_to_disk_ceiling", toDisk);
      f.put("fsyncs_per_call", perCall16);
      report.add(new Report.Row("5b", "host: payments, --durability writes (durable), conc. 16",
          callsLine(p) + String.format(Locale.ROOT, ", %.2f fsyncs/call", perCall16),
          String.format(Locale.ROOT, "%s calls/s (%.2fx memory, %.2fx 5d)", rate(p.perSecond()),
              ratio, toDisk),
          ">= 0.5x memory", ratio >= 0.5, f));
      Driver.Result p64 = new Driver(runtime, call("payments.process-payment", "1.0.0",
          PAY_ARGS, "non_idempotent_write", "dpay64"), host).run(64, warmup, measure);
      double perCall = flushesPerCall(port);
      Map<String, Object> f64 = resultFigures(p64);
      f64.put("fsyncs_per_call_so_far", perCall);
      report.add(new Report.Row("5c", "host: payments, --durability writes (durable), conc. 64",
          callsLine(p64) + String.format(Locale.ROOT, ", %.2f fsyncs/call (both rows)", perCall),
          String.format(Locale.ROOT, "%s calls/s", rate(p64.perSecond())),
          ">= 4 000 calls/s", p64.perSecond() >= 4000, f64));
    }
    // After 5a-5c so that it reads as a reference for them: what two flushes per call cost here.
    report.add(new Report.Row("5d", "ceiling: disk alone, 16 callers x 2 flushes",
        String.format(Locale.ROOT, "%s calls/s, %.2f fsyncs/call", rate(disk.perSecond()),
            disk.flushesPerCall()),
        String.format(Locale.ROOT, "reference: caps 5b at %.2fx memory",
            disk.perSecond() / memory.perSecond()),
        "", null, figures("per_s", disk.perSecond(), "calls", disk.calls(), "fsyncs_per_call",
            disk.flushesPerCall(), "ratio_to_memory", disk.perSecond() / memory.perSecond())));
  }

  private static final java.util.regex.Pattern HTTP_LINE =
      java.util.regex.Pattern.compile("http endpoint on http://[^:]+:(\\d+)/");

  /** The port of {@code --http 127.0.0.1:0}, from the host's start-up log. */
  private static int httpPort(HostProcess host) throws Exception {
    int[] port = {-1};
    Await.until("the host's http endpoint line in its log", () -> {
      java.util.regex.Matcher m = HTTP_LINE.matcher(host.stderr());
      if (m.find()) {
        port[0] = Integer.parseInt(m.group(1));
        return true;
      }
      return false;
    }, START_TIMEOUT);
    return port[0];
  }

  /** Outbox device flushes per call the host has served so far, from its /metrics. */
  private static double flushesPerCall(int port) throws Exception {
    var client = java.net.http.HttpClient.newHttpClient();
    String text = client.send(java.net.http.HttpRequest.newBuilder(
            java.net.URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString()).body();
    double flushes = 0;
    double calls = 0;
    for (String line : text.lines().toList()) {
      if (line.startsWith("phrony_worker_outbox_flushes_total")) {
        flushes += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      } else if (line.startsWith("phrony_worker_invocations_total{")) {
        calls += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    return calls == 0 ? 0 : flushes / calls;
  }

  // ---------------------------------------------------------------- 6. start and list

  private void startup() throws Exception {
    Path gen = Plugins.generate(work, work.resolve("plugins-100"), 100);
    Path ten = Plugins.subset(gen, work.resolve("plugins-10"), 10);
    int runs = quick ? 3 : 5;
    double[] s = new double[runs];
    double[] cpu = new double[runs];
    for (int i = 0; i < runs; i++) {
      String id = "bench-start-" + i;
      CompletableFuture<Long> registered = new CompletableFuture<>();
      try (LocalRuntime.Subscription sub = runtime.onEvent(e -> {
        if (Event.out(WorkServerMsg.BodyCase.REGISTERED).test(e) && id.equals(e.workerId())) {
          registered.complete(System.nanoTime());
        }
      }); HostProcess host = HostProcess.start(dist, work, "start-" + i, withExtraOpts(List.of()),
          List.of("run", "--plugins", ten.toString(), "--runtime", runtime.target(),
              "--worker-id", id, "--drain-timeout", "5s", "--http", "none",
              "--state-dir-in-build-output", "--state-dir",
              work.resolve("state-start").toString()))) {
        long at = registered.get(START_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        cpu[i] = host.cpuNanos() / 1e9;
        s[i] = (at - host.startedNanos()) / 1e9;
        if (!runtime.worker(id).map(w -> w.handlers().size() == 10).orElse(false)) {
          throw new IllegalStateException("start " + i + ": not 10 handlers registered");
        }
      }
    }
    double median = median(s);
    report.add(new Report.Row("6a", "start to registered, 10 plugins (median of " + runs + ")",
        String.format(Locale.ROOT, "%.2f s (runs: %s); host CPU by then %.2f s", median,
            seconds(s), median(cpu)),
        String.format(Locale.ROOT, "%.2f s", median), "<= 0.8 s", median <= 0.8,
        figures("median_s", median, "runs_s", Arrays.stream(s).boxed().toList(),
            "median_cpu_s", median(cpu), "cds", System.getenv().getOrDefault(
                "PHRONY_WORKER_CDS", "auto"))));
  }

  private void listHandlers() throws Exception {
    Path gen = work.resolve("plugins-100");
    if (!Files.isDirectory(gen)) {
      gen = Plugins.generate(work, gen, 100);
    }
    int runs = quick ? 1 : 3;
    double[] s = new double[runs];
    for (int i = 0; i < runs; i++) {
      try (HostProcess h = HostProcess.start(dist, work, "list-" + i, withExtraOpts(List.of()),
          List.of("list-handlers", "--plugins", gen.toString()))) {
        int rc = h.awaitExit(START_TIMEOUT);
        s[i] = (System.nanoTime() - h.startedNanos()) / 1e9;
        long rows = h.stdout().lines().filter(l -> l.startsWith("gen.tool-")).count();
        if (rc != 0 || rows != 100) {
          throw new IllegalStateException("list-handlers exited " + rc + " listing " + rows
              + " of 100 handlers; stderr: " + h.stderr());
        }
      }
    }
    double median = median(s);
    report.add(new Report.Row("6b", "list-handlers, 100 plugins"
        + (runs > 1 ? " (median of " + runs + ")" : ""),
        String.format(Locale.ROOT, "%.2f s (runs: %s)", median, seconds(s)),
        String.format(Locale.ROOT, "%.2f s", median), "<= 2.0 s", median <= 2.0,
        figures("median_s", median, "runs_s", Arrays.stream(s).boxed().toList())));
  }

  // ---------------------------------------------------------------- 7. live plugin reload

  /** The host's settle time (its default): a change to the plugins folder loads after 1 s quiet. */
  static final Duration RELOAD_SETTLE = Duration.ofSeconds(1);
  /** The reload rows' lease TTL: a generation that stops heartbeating is routed to for 3 s at most. */
  static final Duration RELOAD_LEASE = Duration.ofSeconds(3);

  /**
   * Live plugin reload, on a runtime of its own with a {@link #RELOAD_LEASE} lease, against a host
   * watching a plugins folder that holds the bundled echo plugin.
   *
   * <p>7b: the no-op at concurrency 64 for a fixed window, with a new plugin jar moved in so that
   * its reload falls in the window's middle (a new key: a new generation registers beside the old
   * one, which stops heartbeating and closes once its lease lapses and its calls are done). 7a:
   * the same load without a reload, as long as 7b in two halves, one right before 7b and one once
   * the old stream has closed, so that a machine that drifts moves both alike; first the host
   * warms up by calls served ({@link #warmUp}). 7c: from moving a jar with a new key in to the
   * first call of that key served, each run with a new jar, the next run once the previous
   * hand-over is over.
   */
  private void reload() throws Exception {
    // 7a: two halves around 7b, as long as 7b together; 7b: the reload a settle time after the
    // move, mid-window, and the old lease lapsing before the window ends
    Duration half = Duration.ofSeconds(quick ? 2 : 4);
    Duration window = Duration.ofSeconds(quick ? 6 : 8);
    int runs = 3;
    Path dir = work.resolve("reload");
    // gen-001 for 7b, gen-002... for 7c; compiled outside the watched folder, moved in one by one
    Path staged = Plugins.generate(dir, dir.resolve("staged"), 1 + runs);
    Path plugins = dir.resolve("plugins");
    copyTree(dist.resolve("plugins/echo"), plugins.resolve("echo"));
    Handover handover = new Handover();
    List<String> args = new ArrayList<>(List.of("--plugins", plugins.toString()));
    args.addAll(echoSlots(64));
    try (LocalRuntime rt = LocalRuntime.builder().port(0).leaseTtl(RELOAD_LEASE)
            .eventLogCapacity(4096).start();
        LocalRuntime.Subscription sub = rt.onEvent(handover::onEvent);
        HostProcess host = startHost(rt, "host-reload", List.of(), args)) {
      String first = "bench-" + hosts;
      Driver steadyLoad = new Driver(rt, echo(ARGS, "rsteady"), host);
      long[] warmed = warmUp(steadyLoad);
      Driver.Slice before = steadyLoad.slice(64, Duration.ZERO, half);

      // 7b: the move is timed so that the reload (one settle time after it) is mid-window
      long windowStart = System.nanoTime();
      long moveAt = windowStart + window.dividedBy(2).minus(RELOAD_SETTLE).toNanos();
      CompletableFuture<Long> moved = new CompletableFuture<>();
      Thread.ofPlatform().name("bench-reload-move").daemon().start(() -> {
        try {
          for (long left; (left = moveAt - System.nanoTime()) > 0; ) {
            LockSupport.parkNanos(left);
          }
          moved.complete(moveIn(staged.resolve("gen-001.jar"), plugins));
        } catch (Throwable t) {
          moved.completeExceptionally(t);
        }
      });
      Driver.Result during = new Driver(rt, echo(ARGS, "rduring"), host)
          .run(64, Duration.ZERO, window);
      long movedAt = moved.get(30, TimeUnit.SECONDS);
      String second = handover.awaitRegistered(first, movedAt, Duration.ofSeconds(15));
      Long oldEnded = handover.awaitEnded(first, RELOAD_LEASE.plusSeconds(15));
      Driver.Slice afterSlice = steadyLoad.slice(64, Duration.ZERO, half);

      Driver.Result steady = Driver.Result.of(List.of(before, afterSlice));
      Driver.Result pre = Driver.Result.of(List.of(before));
      Driver.Result after = Driver.Result.of(List.of(afterSlice));
      Map<String, Object> fs = resultFigures(steady);
      fs.put("max_ms", steady.maxMs());
      fs.put("before_p99_ms", pre.p99Ms());
      fs.put("after_p99_ms", after.p99Ms());
      fs.put("window_s", 2 * half.toMillis() / 1000.0);
      fs.put("warmup_calls", warmed[0]);
      fs.put("warmup_s", warmed[1] / 1e9);
      fs.put("lease_ttl_s", RELOAD_LEASE.toSeconds());
      report.add(new Report.Row("7a", "reload: no-op (echo) conc. 64, no reload (" + human(half)
          + " before 7b + " + human(half) + " after)", callsLine(steady) + String.format(
              Locale.ROOT, ", max %s; before %s calls/s p99 %s, after %s calls/s p99 %s; warm-up"
                  + " %s calls in %.1f s", ms(steady.maxMs()), rate(pre.perSecond()),
              ms(pre.p99Ms()), rate(after.perSecond()), ms(after.p99Ms()), rate(warmed[0]),
              warmed[1] / 1e9),
          "p99 " + ms(steady.p99Ms()), "reference", null, fs));

      double ratio = during.p99Ms() / steady.p99Ms();
      long failed = during.errors();
      double movedS = (movedAt - windowStart) / 1e9;
      double registeredS = (handover.registered.get(second) - windowStart) / 1e9;
      double closedS = oldEnded == null ? Double.NaN : (oldEnded - windowStart) / 1e9;
      Map<String, Object> fd = resultFigures(during);
      fd.put("max_ms", during.maxMs());
      fd.put("window_s", window.toMillis() / 1000.0);
      fd.put("p99_ratio_to_steady", ratio);
      fd.put("failed_calls", failed);
      fd.put("moved_at_s", movedS);
      fd.put("new_generation", second);
      fd.put("registered_at_s", registeredS);
      fd.put("old_stream_closed_at_s", closedS);
      fd.put("host_reload_lines", reloadLines(host));
      report.add(new Report.Row("7b", "reload: the same for " + human(window)
          + ", a new generation mid-window",
          callsLine(during) + ", max " + ms(during.maxMs()) + String.format(Locale.ROOT,
              "; %d failed calls; jar in at %.1f s, %s registered at %.1f s, old stream closed"
                  + " at %s", failed, movedS, second, registeredS,
              Double.isNaN(closedS) ? "(not within " + human(RELOAD_LEASE.plusSeconds(15)) + ")"
                  : String.format(Locale.ROOT, "%.1f s", closedS)),
          String.format(Locale.ROOT, "p99 %.2fx 7a, %d failed", ratio, failed),
          "p99 <= 2x 7a, 0 failed", Double.isNaN(ratio) ? null : ratio <= 2 && failed == 0, fd));
      if (failed > 0 || steady.errors() > 0) {
        System.err.println("bench: reload: failed calls (7a " + steady.errors() + ", 7b " + failed
            + "), first: " + (failed > 0 ? during.firstError() : steady.firstError())
            + "; the host's log is " + work.resolve("host-reload.err") + ", its warnings:");
        host.stderr().lines().filter(l -> l.contains("WARN") || l.contains("ERROR")
            || l.contains("plugins_reloaded")).limit(40).forEach(System.err::println);
      }

      // 7c: a new key, from the move to its first call served; each run a new jar (generation)
      String current = second;
      double[] serve = new double[runs];
      double[] registered = new double[runs];
      double[] handedOver = new double[runs];
      int retries = 0;
      for (int i = 0; i < runs; i++) {
        String tool = String.format(Locale.ROOT, "gen.tool-%03d", i + 2);
        LongFunction<Call> calls = call(tool, "1.0.0", ARGS, "read_only", "rnew-" + i);
        long t0 = moveIn(staged.resolve(String.format(Locale.ROOT, "gen-%03d.jar", i + 2)),
            plugins);
        // A dispatch before the handler is registered waits in the runtime's queue for it (up
        // to its 10 s dispatch wait): a poll that answers the moment the key is served.
        long[] dispatched = {0};
        Outcome[] last = {null};
        boolean served = Await.holds(() -> {
          last[0] = rt.dispatch(calls.apply(dispatched[0]++)).orTimeout(30, TimeUnit.SECONDS)
              .join();
          return last[0] instanceof Outcome.Result;
        }, Duration.ofSeconds(20));
        serve[i] = (System.nanoTime() - t0) / 1e9;
        if (!served) {
          throw new IllegalStateException(tool + " not served 20 s after its jar was moved in;"
              + " last outcome " + last[0] + "; host log " + work.resolve("host-reload.err"));
        }
        retries += (int) dispatched[0] - 1;
        String next = handover.awaitRegistered(current, t0, Duration.ofSeconds(15));
        long nextAt = handover.registered.get(next);
        registered[i] = (nextAt - t0) / 1e9;
        // the next run starts once this hand-over is over: one old generation at a time
        Long ended = handover.awaitEnded(current, RELOAD_LEASE.plusSeconds(15));
        handedOver[i] = ended == null ? Double.NaN : (ended - nextAt) / 1e9;
        current = next;
      }
      double median = median(serve);
      double max = Arrays.stream(serve).max().orElse(Double.NaN);
      report.add(new Report.Row("7c", "reload: new jar moved in to its first call served ("
          + runs + " runs)", String.format(Locale.ROOT, "median %.2f s, max %.2f s (runs: %s);"
              + " registered after %.2f s (median), old stream closed %s s after that%s",
              median, max, seconds(serve), median(registered), seconds(handedOver),
              retries == 0 ? "" : "; " + retries + " dispatches not served"),
          String.format(Locale.ROOT, "%.2f s median, %.2f s max", median, max),
          "<= 1.5 s (median; 1 s settle)", median <= 1.5,
          figures("median_s", median, "max_s", max, "runs_s", Arrays.stream(serve).boxed()
                  .toList(), "registered_after_s", Arrays.stream(registered).boxed().toList(),
              "old_closed_after_registered_s", Arrays.stream(handedOver).boxed().toList(),
              "unserved_dispatches", retries, "lease_ttl_s", RELOAD_LEASE.toSeconds(),
              "host_reload_lines", reloadLines(host))));
    }
  }

  /** Calls served before a fresh host's figures count: the JIT's work goes by calls, not time. */
  static final long RELOAD_WARMUP_CALLS = 250_000;

  /**
   * Runs the load in 1 s slices until {@link #RELOAD_WARMUP_CALLS} calls are served (at least 2 s,
   * at most 20 s). A host just started, with a runtime side not yet compiled either (with
   * {@code --only reload}), ran at a fifth to a half of its later calls/s after 3 s here, and
   * warmed up over about 250 000 calls, sooner or later in time as the machine was busy. Returns
   * the calls and the nanoseconds it took.
   */
  private static long[] warmUp(Driver load) throws InterruptedException {
    long t0 = System.nanoTime();
    long calls = 0;
    long elapsed;
    do {
      calls += load.slice(64, Duration.ZERO, Duration.ofSeconds(1)).ok();
      elapsed = System.nanoTime() - t0;
    } while (elapsed < TimeUnit.SECONDS.toNanos(20)
        && (calls < RELOAD_WARMUP_CALLS || elapsed < TimeUnit.SECONDS.toNanos(2)));
    return new long[] {calls, elapsed};
  }

  /** When each worker id registered and when its stream ended (System.nanoTime()). */
  private static final class Handover {
    final Map<String, Long> registered = new java.util.concurrent.ConcurrentHashMap<>();
    final Map<String, Long> ended = new java.util.concurrent.ConcurrentHashMap<>();

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
      if (!Await.holds(() -> {
        registered.forEach((id, at) -> {
          if (!id.equals(old) && at >= since
              && (found[0] == null || at < registered.get(found[0]))) {
            found[0] = id;
          }
        });
        return found[0] != null;
      }, timeout)) {
        throw new IllegalStateException("no new plugin generation registered within " + timeout
            + " of moving a jar in (still " + old + ")");
      }
      return found[0];
    }

    /** When {@code id}'s stream ended, waiting up to {@code timeout}; null if it did not. */
    Long awaitEnded(String id, Duration timeout) {
      return Await.holds(() -> ended.containsKey(id), timeout) ? ended.get(id) : null;
    }
  }

  /**
   * Moves {@code jar} into {@code plugins} as the README says to: copied in under a hidden name,
   * then renamed atomically. Returns System.nanoTime() at the rename.
   */
  private static long moveIn(Path jar, Path plugins) throws IOException {
    String name = jar.getFileName().toString();
    Path tmp = plugins.resolve("." + name.substring(0, name.length() - ".jar".length()) + ".tmp");
    Files.copy(jar, tmp, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    long at = System.nanoTime();
    Files.move(tmp, plugins.resolve(name), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    // to read beside the host's log (its times are UTC wall-clock too)
    System.err.println("bench: reload: " + name + " moved in at " + Instant.now());
    return at;
  }

  private static void copyTree(Path from, Path to) throws IOException {
    try (var paths = Files.walk(from)) {
      for (Path p : paths.toList()) {
        Path t = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(t);
        } else {
          Files.copy(p, t, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
      }
    }
  }

  /** The host's {@code plugins_reloaded} log lines. */
  private static List<String> reloadLines(HostProcess host) {
    return host.stderr().lines().filter(l -> l.contains("plugins_reloaded")).toList();
  }

  // ---------------------------------------------------------------- 8. a real runtime

  /**
   * One worker of step realrt on its own runtime process: the pids whose CPU is counted, the
   * rate of its last batch (which sizes the next batch to a duration) and its measured slices.
   */
  private static final class RealSide {
    final String name;
    final RealRuntime runtime;
    long workerPid;
    double rate = Double.NaN;
    final List<RealSlice> slices = new ArrayList<>();

    RealSide(String name, RealRuntime runtime, long workerPid) {
      this.name = name;
      this.runtime = runtime;
      this.workerPid = workerPid;
    }
  }

  /**
   * One measured {@code /dispatch-batch}: the runtime's figures, and the CPU (ns) the worker and
   * its runtime used over it, and what the other pair (idle) used meanwhile.
   */
  private record RealSlice(RealRuntime.Batch batch, long workerCpu, long runtimeCpu,
      long idleCpu, long wallNanos) {}

  private static final String ECHO_KEY = "echo@default";
  private static final Duration REAL_FIRST_ROUND = Duration.ofSeconds(2);
  private int realBatches;

  /**
   * Rows 8a-8c: the host and a peer worker binary ({@code --peer-bin}, testworker's flags) on a
   * runtime binary ({@code --runtime-bin}, realrt's flags and control API), loaded by the
   * runtime's own {@code /dispatch-batch}. Each worker has a runtime process of its own, started
   * alike, so each is the only worker its runtime has while it is measured, and neither has to
   * be restarted between turns: a fresh host needs some 250 000 calls before its JIT is done,
   * and the runtime has no call that unregisters a worker. An idle pair costs nothing but a
   * heartbeat every 15 s (the JSON report has its CPU). Paired as rows 2c/2d are: a first round
   * that only warms up, then slices in which each worker is warmed up again and measured, in an
   * order that alternates from slice to slice.
   */
  private void realRuntime() throws Exception {
    for (Path bin : List.of(runtimeBin, peerBin)) {
      if (!Files.isRegularFile(bin) || !Files.isExecutable(bin)) {
        throw new IllegalArgumentException(bin + " is not an executable file");
      }
    }
    report.meta.put("runtime_bin", runtimeBin.toString());
    report.meta.put("peer_bin", peerBin.toString());
    try (RealRuntime hostRt = RealRuntime.start(runtimeBin, work.resolve("realrt-host.log"),
            START_TIMEOUT);
        RealRuntime peerRt = RealRuntime.start(runtimeBin, work.resolve("realrt-peer.log"),
            START_TIMEOUT);
        HostProcess host = startHost(hostRt.target(), "host-realrt", List.of(),
            List.of("--drain-timeout", "1s", "--handler", ECHO_KEY + ":max-concurrency=64"),
            id -> registered(hostRt, 1))) {
      RealSide h = new RealSide("host", hostRt, host.pid());
      BinaryProcess peer = startPeerBin(peerRt, "peer-noop", true);
      try {
        RealSide p = new RealSide("peer", peerRt, peer.pid());
        ObjectNode noop = RealRuntime.template("s-bench-rt-noop", "echo", "default", ARGS);
        // The JIT's work goes by calls: a fresh host first serves as many as row 7's does.
        long[] warmed = warmUpReal(h, p, noop, RELOAD_WARMUP_CALLS);
        report.meta.put("realrt_host_warmup", Map.of("calls", warmed[0], "s", warmed[1] / 1e9));
        warmUpReal(p, h, noop, 0);
        realRow("8a", "real runtime: no-op (echo), concurrency 1", h, p, noop, 1, "c1", 1.0);
        realRow("8b", "real runtime: no-op (echo), concurrency 64", h, p, noop, 64, "c64", 1.1);
        // testworker --noop ignores its arguments; the sleeping row needs one without it
        peer.close();
        Await.until("the noop peer gone from the runtime", () -> registered(peerRt, 0),
            START_TIMEOUT);
        peer = startPeerBin(peerRt, "peer-sleep", false);
        p.workerPid = peer.pid();
        ObjectNode sleep = RealRuntime.template("s-bench-rt-s64", "echo", "default",
            "{\"sleep_ms\":50}".getBytes(StandardCharsets.UTF_8));
        realRow("8c", "real runtime: 50 ms handler, concurrency 64", h, p, sleep, 64, "s64",
            0.98);
      } finally {
        peer.close();
      }
    }
  }

  /**
   * Row 8d: what crosses the wire per call between each worker and a runtime binary of its own,
   * counted by a {@link FrameRelay} in between: HTTP/2 frames by type each way, DATA payload
   * bytes, and the relay's reads (each at least one write of the sender). No goal: it explains
   * the CPU each side spends in rows 8a-8b (fewer frames and writes per call, less CPU).
   */
  private void frames() throws Exception {
    long c64 = quick ? 2_000 : 40_000;
    long c1 = quick ? 200 : 4_000;
    Map<String, Object> f = new LinkedHashMap<>();
    List<String> lines = new ArrayList<>();
    for (String side : List.of("host", "peer")) {
      try (RealRuntime rt = RealRuntime.start(runtimeBin, work.resolve("frames-" + side + ".log"),
              START_TIMEOUT);
          FrameRelay relay = FrameRelay.to(rt.target());
          AutoCloseable worker = side.equals("host")
              ? startHost(relay.target(), "host-frames", List.of(), List.of("--drain-timeout",
                  "1s", "--handler", ECHO_KEY + ":max-concurrency=64"), id -> registered(rt, 1))
              : startPeerBin(rt, relay.target(), "peer-frames", true)) {
        ObjectNode noop = RealRuntime.template("s-bench-frames", "echo", "default", ARGS);
        rt.batch(noop, quick ? 2_000 : 100_000, 64, "frames-w-" + side + "-",
            Duration.ofMinutes(2)); // the host's JIT first: a cold host frames differently
        Map<String, Object> sideFigures = new LinkedHashMap<>();
        for (long[] load : List.of(new long[] {64, c64}, new long[] {1, c1})) {
          FrameRelay.Counts up0 = relay.workerToRuntime();
          FrameRelay.Counts down0 = relay.runtimeToWorker();
          RealRuntime.Batch b = rt.batch(noop, load[1], (int) load[0],
              "frames-" + side + "-c" + load[0] + "-", Duration.ofMinutes(2));
          FrameRelay.Counts up = relay.workerToRuntime().minus(up0);
          FrameRelay.Counts down = relay.runtimeToWorker().minus(down0);
          sideFigures.put("c" + load[0], Map.of("calls", b.ok(), "worker_to_runtime",
              up.perCall(b.ok()), "runtime_to_worker", down.perCall(b.ok())));
          if (load[0] == 64) {
            lines.add(String.format(Locale.ROOT, "%s c=64 per call: up %s; down %s", side,
                frameLine(up, b.ok()), frameLine(down, b.ok())));
          }
        }
        f.put(side, sideFigures);
      }
    }
    report.add(new Report.Row("8d", "real runtime: HTTP/2 frames per call (relay-counted)",
        String.join("; ", lines), "", "", null, f));
  }

  /** "F frames (DATA d x B B, HEADERS h, WINDOW_UPDATE w, PING p), R reads". */
  private static String frameLine(FrameRelay.Counts c, long calls) {
    StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "%.2f frames (",
        (double) c.frames() / calls));
    b.append(String.format(Locale.ROOT, "DATA %.2f x %.0f B", (double) c.frames("DATA") / calls,
        c.frames("DATA") == 0 ? 0.0 : (double) c.dataBytes() / c.frames("DATA")));
    for (String t : List.of("HEADERS", "WINDOW_UPDATE", "PING", "SETTINGS", "RST_STREAM")) {
      if (c.frames(t) > 0) {
        b.append(String.format(Locale.ROOT, ", %s %.3f", t, (double) c.frames(t) / calls));
      }
    }
    return b.append(String.format(Locale.ROOT, "), %.2f reads", (double) c.reads() / calls))
        .toString();
  }

  /** Whether {@code rt} has {@code n} workers for echo@default; fails when it has exited. */
  private static boolean registered(RealRuntime rt, int n) {
    if (!rt.alive()) {
      throw new IllegalStateException("the runtime exited; its output:\n" + rt.tail(20));
    }
    try {
      return rt.workerCount(ECHO_KEY) == n;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** The {@code --peer-bin} worker serving echo@default with 64 slots, once it is registered. */
  private BinaryProcess startPeerBin(RealRuntime rt, String id, boolean noop) throws Exception {
    return startPeerBin(rt, rt.target(), id, noop);
  }

  /** The same, dialling {@code addr} (a relay in front of {@code rt}). */
  private BinaryProcess startPeerBin(RealRuntime rt, String addr, String id, boolean noop)
      throws Exception {
    List<String> cmd = new ArrayList<>(List.of(peerBin.toString(), "--addr", addr,
        "--worker-id", id, "--tool", "echo", "--version", "default", "--max-concurrency", "64"));
    if (noop) {
      cmd.add("--noop");
    }
    BinaryProcess peer = BinaryProcess.start(id, cmd, work.resolve(id + ".log"));
    try {
      Await.until("peer " + id + " registered", () -> {
        if (!peer.alive()) {
          throw new IllegalStateException("peer " + id + " exited; its output:\n"
              + peer.tail(20));
        }
        return registered(rt, 1);
      }, START_TIMEOUT);
    } catch (RuntimeException | AssertionError e) {
      peer.close();
      throw e;
    }
    return peer;
  }

  /**
   * {@code side} at concurrency 64 for at least the warm-up and until it has served
   * {@code calls} (at most 20 s); returns the calls and the nanoseconds.
   */
  private long[] warmUpReal(RealSide side, RealSide idle, ObjectNode template, long calls)
      throws Exception {
    long t0 = System.nanoTime();
    long served = 0;
    long elapsed;
    do {
      served += realBatch(side, idle, template, 64, Duration.ofSeconds(1), "warm").batch().ok();
      elapsed = System.nanoTime() - t0;
    } while (elapsed < TimeUnit.SECONDS.toNanos(20)
        && (served < calls || elapsed < warmup.toNanos()));
    return new long[] {served, elapsed};
  }

  private void realRow(String id, String scenario, RealSide h, RealSide p, ObjectNode template,
      int concurrency, String tag, double goal) throws Exception {
    int slices = quick ? 1 : PAIRED_SLICES;
    Duration slice = measure.dividedBy(slices);
    Duration rewarm = SLICE_WARMUP.compareTo(warmup) < 0 ? SLICE_WARMUP : warmup;
    Duration first = REAL_FIRST_ROUND.compareTo(warmup) < 0 ? REAL_FIRST_ROUND : warmup;
    List<RealSide> sides = List.of(h, p);
    for (RealSide s : sides) {
      s.rate = Double.NaN; // a new load: the first batch is small, the next ones sized by rate
      s.slices.clear();
    }
    for (RealSide s : sides) {
      runReal(s, other(s, sides), template, concurrency, first, tag + "-w");
    }
    for (int i = 0; i < slices; i++) {
      for (int k = 0; k < sides.size(); k++) {
        RealSide s = sides.get((i + k) % sides.size());
        runReal(s, other(s, sides), template, concurrency, rewarm, tag + "-w");
        s.slices.add(realBatch(s, other(s, sides), template, concurrency, slice, tag));
      }
    }
    List<Double> hostRates = h.slices.stream().map(x -> x.batch().perSecond()).toList();
    List<Double> peerRates = p.slices.stream().map(x -> x.batch().perSecond()).toList();
    List<Double> ratios = new ArrayList<>();
    for (int i = 0; i < slices; i++) {
      ratios.add(Math.round(1000 * hostRates.get(i) / peerRates.get(i)) / 1000.0);
    }
    double ratio = median(ratios);
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("concurrency", concurrency);
    f.put("host", realFigures(h));
    f.put("peer", realFigures(p));
    f.put("ratio", ratio);
    f.put("slice_ratios", ratios);
    report.add(new Report.Row(id, scenario,
        realLine("host", h) + "; " + realLine("peer", p),
        String.format(Locale.ROOT, "host %.2fx peer%s", ratio, spread(ratios)),
        String.format(Locale.ROOT, ">= %.2fx", goal), Double.isNaN(ratio) ? null : ratio >= goal,
        f));
  }

  private static RealSide other(RealSide s, List<RealSide> sides) {
    return sides.get(0) == s ? sides.get(1) : sides.get(0);
  }

  /**
   * {@code duration} in equal batches of at most 1 s, nothing counted. Equal: a short last
   * batch would leave a rate that its start and end weigh on, and the next batch is sized by it.
   */
  private void runReal(RealSide side, RealSide idle, ObjectNode template, int concurrency,
      Duration duration, String tag) throws Exception {
    long n = Math.max(1, (duration.toNanos() + TimeUnit.SECONDS.toNanos(1) - 1)
        / TimeUnit.SECONDS.toNanos(1));
    for (long i = 0; i < n && !duration.isZero(); i++) {
      realBatch(side, idle, template, concurrency, duration.dividedBy(n), tag);
    }
  }

  /**
   * One {@code /dispatch-batch} of about {@code duration} at the side's last rate (a whole
   * number of rounds of {@code concurrency}; 10 rounds when there is no rate yet), a call id
   * prefix of its own, and the CPU of all four processes around it.
   */
  private RealSlice realBatch(RealSide side, RealSide idle, ObjectNode template, int concurrency,
      Duration duration, String tag) throws Exception {
    long rounds = Double.isNaN(side.rate) ? 10
        : Math.max(1, (long) Math.ceil(side.rate * duration.toNanos() / 1e9 / concurrency));
    long count = rounds * concurrency;
    String prefix = String.format(Locale.ROOT, "rt-%s-%s-%d-", tag, side.name, ++realBatches);
    Duration timeout = Duration.ofSeconds(60).plus(duration.multipliedBy(10));
    long[] before = realCpu(side, idle);
    long t0 = System.nanoTime();
    RealRuntime.Batch b = side.runtime.batch(template, count, concurrency, prefix, timeout);
    long wall = System.nanoTime() - t0;
    long[] after = realCpu(side, idle);
    if (b.ok() > 0 && b.elapsedMs() > 0 && (Double.isNaN(side.rate) || b.elapsedMs() >= 100)) {
      side.rate = b.perSecond();
    }
    boolean known = Arrays.stream(before).allMatch(v -> v >= 0)
        && Arrays.stream(after).allMatch(v -> v >= 0);
    return new RealSlice(b, known ? after[0] - before[0] : -1, known ? after[1] - before[1] : -1,
        known ? after[2] + after[3] - before[2] - before[3] : -1, wall);
  }

  /** CPU (ns) of the side's worker, its runtime, the idle worker and its runtime. */
  private static long[] realCpu(RealSide side, RealSide idle) {
    return new long[] {HostProcess.cpuNanos(side.workerPid), HostProcess.cpuNanos(
        side.runtime.pid()), HostProcess.cpuNanos(idle.workerPid),
        HostProcess.cpuNanos(idle.runtime.pid())};
  }

  /** "N calls/s, CPU/call NAME x + runtime y": the median slice and CPU over all slices. */
  private static String realLine(String name, RealSide s) {
    Map<String, Object> f = realFigures(s);
    long errors = (long) f.get("errors");
    return String.format(Locale.ROOT, "%s %s calls/s, CPU/call %s %s + runtime %s%s", name,
        rate((double) f.get("per_s")), name, us((double) f.get("worker_cpu_us_per_call")),
        us((double) f.get("runtime_cpu_us_per_call")),
        errors == 0 ? "" : "; " + errors + " errors " + f.get("error_kinds"));
  }

  private static Map<String, Object> realFigures(RealSide s) {
    long ok = 0;
    long errors = 0;
    long workerCpu = 0;
    long runtimeCpu = 0;
    long idleCpu = 0;
    long wall = 0;
    boolean known = true;
    Map<String, Long> kinds = new java.util.TreeMap<>();
    for (RealSlice x : s.slices) {
      ok += x.batch().ok();
      errors += x.batch().errors() + x.batch().dispatchErrors();
      x.batch().errorKinds().forEach((k, v) -> kinds.merge(k, v, Long::sum));
      known &= x.workerCpu() >= 0;
      workerCpu += x.workerCpu();
      runtimeCpu += x.runtimeCpu();
      idleCpu += x.idleCpu();
      wall += x.wallNanos();
    }
    List<Double> rates = s.slices.stream().map(x -> x.batch().perSecond()).toList();
    return figures("per_s", median(rates), "slices_per_s", rates,
        "p50_ms", median(s.slices.stream().map(x -> x.batch().p50Ms()).toList()),
        "p99_ms", median(s.slices.stream().map(x -> x.batch().p99Ms()).toList()),
        "calls", ok, "errors", errors, "error_kinds", kinds,
        "worker_cpu_us_per_call", known ? workerCpu / 1e3 / ok : Double.NaN,
        "runtime_cpu_us_per_call", known ? runtimeCpu / 1e3 / ok : Double.NaN,
        "idle_pair_cpu_ms_per_s", known ? idleCpu / 1e6 / (wall / 1e9) : Double.NaN);
  }

  private static double median(List<Double> values) {
    return values.isEmpty() ? Double.NaN
        : median(values.stream().mapToDouble(Double::doubleValue).toArray());
  }

  // ---------------------------------------------------------------- helpers

  private HostProcess startHost(String name, List<String> javaOpts, List<String> extraArgs)
      throws Exception {
    return startHost(runtime, name, javaOpts, extraArgs);
  }

  /** A host on {@code runtime} as worker {@code bench-<n>} ({@link #hosts}), once it is registered. */
  private HostProcess startHost(LocalRuntime runtime, String name, List<String> javaOpts,
      List<String> extraArgs) throws Exception {
    return startHost(runtime.target(), name, javaOpts, extraArgs,
        id -> runtime.worker(id).filter(WorkerView::connected).isPresent());
  }

  /**
   * A host on the runtime at {@code target} as worker {@code bench-<n>}, once
   * {@code registered} holds for its worker id. {@code --drain-timeout} is 10 s and
   * {@code --http} none unless {@code extraArgs} sets them.
   */
  private HostProcess startHost(String target, String name, List<String> javaOpts,
      List<String> extraArgs, java.util.function.Predicate<String> registered) throws Exception {
    String id = "bench-" + (++hosts);
    javaOpts = withExtraOpts(javaOpts);
    List<String> args = new ArrayList<>(List.of("run", "--runtime", target,
        "--worker-id", id, "--state-dir-in-build-output",
        "--state-dir", work.resolve("state-" + name).toString()));
    if (!extraArgs.contains("--drain-timeout")) {
      args.addAll(List.of("--drain-timeout", "10s"));
    }
    if (!extraArgs.contains("--http")) {
      args.addAll(List.of("--http", "none"));
    }
    args.addAll(extraArgs);
    HostProcess host = HostProcess.start(dist, work, name, javaOpts, args, true);
    try {
      Await.until(name + " registered as " + id, () -> {
        if (!host.alive()) {
          throw new IllegalStateException(name + " exited; stderr:\n" + host.stderr());
        }
        return registered.test(id);
      }, START_TIMEOUT);
    } catch (RuntimeException | AssertionError e) {
      host.close();
      throw e;
    }
    return host;
  }

  /** The flag that gives the host's echo handler {@code n} slots. */
  static List<String> echoSlots(int n) {
    return List.of("--handler", "echo@default:max-concurrency=" + n);
  }

  /** {@code opts} plus PHRONY_BENCH_HOST_OPTS. */
  private static List<String> withExtraOpts(List<String> opts) {
    List<String> all = new ArrayList<>(opts);
    String extra = System.getenv("PHRONY_BENCH_HOST_OPTS");
    if (extra != null && !extra.isBlank()) {
      all.addAll(Arrays.asList(extra.trim().split("\\s+")));
    }
    return all;
  }

  private static LongFunction<Call> echo(byte[] args, String tag) {
    return call("echo", "default", args, "read_only", tag);
  }

  private static LongFunction<Call> call(String tool, String version, byte[] args,
      String sideEffect, String tag) {
    String session = "s-bench-" + tag;
    return seq -> new Call(session + ":av-bench:1:" + seq, session, "av-bench", 1, tool, version,
        args, sideEffect, 0);
  }

  private static String callsLine(Driver.Result r) {
    return String.format(Locale.ROOT,
        "%s calls/s, p50 %s, p99 %s, CPU/call host %s + runtime %s, alloc %s/call%s",
        rate(r.perSecond()), ms(r.p50Ms()), ms(r.p99Ms()), us(r.hostCpuUsPerCall()),
        us(r.driverCpuUsPerCall()),
        Double.isNaN(r.hostAllocKibPerCall()) ? "n/a"
            : String.format(Locale.ROOT, "%.1f KiB", r.hostAllocKibPerCall()),
        r.errors() == 0 ? "" : "; " + r.errors() + " errors, first: " + r.firstError());
  }

  private static Map<String, Object> resultFigures(Driver.Result r) {
    return figures("per_s", r.perSecond(), "p50_ms", r.p50Ms(), "p99_ms", r.p99Ms(), "calls",
        r.ok(), "errors", r.errors(), "first_error", r.firstError(), "host_cpu_us_per_call",
        r.hostCpuUsPerCall(), "driver_cpu_us_per_call", r.driverCpuUsPerCall(),
        "host_alloc_kib_per_call", r.hostAllocKibPerCall(), "slices_per_s",
        r.slicesPerSecond());
  }

  /** " (slices LOW-HIGH)" when there is more than one, else nothing. */
  private static String spread(List<Double> ratios) {
    if (ratios.size() < 2) {
      return "";
    }
    return String.format(Locale.ROOT, " (slices %.2f-%.2f)",
        ratios.stream().mapToDouble(Double::doubleValue).min().orElseThrow(),
        ratios.stream().mapToDouble(Double::doubleValue).max().orElseThrow());
  }

  /** Each slice of {@code a} over the slice of {@code b} measured in the same round. */
  private static List<Double> sliceRatios(Driver.Result a, Driver.Result b) {
    List<Double> ratios = new ArrayList<>();
    for (int i = 0; i < Math.min(a.slicesPerSecond().size(), b.slicesPerSecond().size()); i++) {
      ratios.add(Math.round(1000 * a.slicesPerSecond().get(i) / b.slicesPerSecond().get(i))
          / 1000.0);
    }
    return ratios;
  }

  private static Map<String, Object> figures(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put((String) kv[i], kv[i + 1]);
    }
    return m;
  }

  private static String rate(double perSecond) {
    return String.format(Locale.ROOT, "%,.0f", perSecond).replace(',', ' ');
  }

  private static String ms(double v) {
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, v < 10 ? "%.2f ms" : "%.1f ms", v);
  }

  private static String us(double v) {
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, v < 10 ? "%.1f us" : "%.0f us", v);
  }

  private static String mib(double v) {
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.0f", v);
  }

  private static String seconds(double[] s) {
    return String.join(" ", Arrays.stream(s).mapToObj(v -> String.format(Locale.ROOT, "%.2f", v))
        .toList());
  }

  private static double median(double[] s) {
    double[] c = s.clone();
    Arrays.sort(c);
    return c.length % 2 == 1 ? c[c.length / 2] : (c[c.length / 2 - 1] + c[c.length / 2]) / 2;
  }

  private static String human(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
  }

  private static String loadavg() {
    try {
      String[] p = Files.readString(Path.of("/proc/loadavg")).split(" ");
      return p[0] + " " + p[1] + " " + p[2];
    } catch (IOException e) {
      return "n/a";
    }
  }
}
