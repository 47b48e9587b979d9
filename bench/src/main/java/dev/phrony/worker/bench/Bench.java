package dev.phrony.worker.bench;

import dev.phrony.worker.testkit.LocalRuntime;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * {@code bin/bench [--quick]}: one sitting, one table. The ceiling is a bare grpc-java stream
 * between this JVM and a child JVM; every host figure is the assembled distribution's {@code
 * bin/phrony-worker run} as a child process, driven by a {@link LocalRuntime} in this JVM. So both
 * sides of every figure are two processes on the same loopback and the same cores.
 *
 * <p>The runner: it reads the flags, runs the steps ({@link Scenario}s) in order and prints the
 * table and writes the JSON. It reports; it does not fail on a slow machine. It exits 1 only when a
 * scenario could not run at all (a broken bench must not rot unnoticed in CI).
 */
public final class Bench {
  static final String USAGE =
      """
      usage: bench [--quick] [--only STEPS] [--dist DIR] [--out FILE.json]
                   [--runtime-bin PATH --peer-bin PATH]
        --quick        small counts, well under a minute (without the reload rows and the
                       100 000-in-flight row unless --only names them)
        --only STEPS   comma-separated: ceiling,64,1000,10k,durable,start,realrt,frames,cold,
                       reload,list,inflight (default: all); c1, c64, s64 run only those rows of step 64
                       (2a/2c, 2b/2d, 3a/3c)
        --runtime-bin PATH  a runtime binary with realrt's flags and HTTP control API, and
        --peer-bin PATH     a worker binary taking testworker's flags: with both, step realrt
                       (rows 8a-8c) runs the host and that worker on that runtime, paired,
                       step frames (row 8d) counts their HTTP/2 frames per call through
                       a relay, and step cold (row 8e) times the first 5 x 20 000 calls of a
                       fresh worker of each, 3 runs; without them these are skipped
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

  private final Options options;
  private final Sitting sitting;
  private final Report report;
  private final List<String> failures = new ArrayList<>();

  private Bench(Options options) {
    this.options = options;
    this.sitting = new Sitting(options);
    this.report = sitting.report();
  }

  public static void main(String[] args) throws Exception {
    boolean quick = false;
    Set<String> only = new HashSet<>();
    Duration warm = null;
    Duration meas = null;
    Path dist = null;
    Path out = null;
    Path runtimeBin = null;
    Path peerBin = null;
    Path home = Path.of(System.getProperty("phrony.home", ".")).toAbsolutePath().normalize();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--quick" -> quick = true;
        case "--dist" -> dist = Path.of(args[++i]);
        case "--out" -> out = Path.of(args[++i]);
        case "--runtime-bin" -> runtimeBin = Path.of(args[++i]);
        case "--peer-bin" -> peerBin = Path.of(args[++i]);
        case "--only" -> only.addAll(Arrays.asList(args[++i].split(",")));
        case "--warmup" -> warm = seconds(args[++i]);
        case "--measure" -> meas = seconds(args[++i]);
        case "--probe" -> {
          Probe.run(
              home.resolve("dist/target/dist/phrony-worker"),
              home.resolve("bench/target/probe"),
              args);
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
    if (dist == null) {
      dist = home.resolve("dist/target/dist/phrony-worker");
    }
    if (!Files.isExecutable(dist.resolve("bin/phrony-worker"))) {
      System.err.println("bench: no distribution at " + dist + " (run ./mvnw package first)");
      System.exit(1);
    }
    String stamp =
        DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss", Locale.ROOT)
            .withZone(ZoneOffset.UTC)
            .format(Instant.now());
    Path target = home.resolve("bench/target");
    if (out == null) {
      out = target.resolve("bench-" + stamp + ".json");
    }
    if ((runtimeBin == null) != (peerBin == null)) {
      System.err.println(
          "bench: --runtime-bin and --peer-bin go together (rows 8a-8c need a"
              + " runtime and a peer worker)\n"
              + USAGE);
      System.exit(1);
    }
    Duration warmup = warm != null ? warm : quick ? Duration.ofMillis(700) : Duration.ofSeconds(5);
    Duration measure =
        meas != null ? meas : quick ? Duration.ofMillis(1500) : Duration.ofSeconds(10);
    Options options =
        new Options(
            quick,
            only,
            dist,
            target.resolve("bench-work/" + stamp),
            out,
            warmup,
            measure,
            runtimeBin,
            peerBin);
    System.exit(new Bench(options).run());
  }

  private static Duration seconds(String s) {
    return Duration.ofMillis((long) (Double.parseDouble(s) * 1000));
  }

  private int run() throws Exception {
    Files.createDirectories(options.work());
    boolean quick = options.quick();
    report.meta.put("started", Instant.now().toString());
    report.meta.put("mode", quick ? "quick" : "full");
    report.meta.put(
        "java",
        System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"));
    report.meta.put("cores", Runtime.getRuntime().availableProcessors());
    report.meta.put("loadavg_start", loadavg());
    report.meta.put("warmup_s", options.warmup().toMillis() / 1000.0);
    report.meta.put("measure_s", options.measure().toMillis() / 1000.0);
    report.meta.put("distribution", options.dist().toString());
    System.err.printf(
        Locale.ROOT,
        "bench: %s run, warm-up %s, measured %s per figure; load"
            + " average %s (other processes on this machine move absolute figures: compare ratios)%n",
        quick ? "quick" : "full",
        Format.human(options.warmup()),
        Format.human(options.measure()),
        loadavg());

    try {
      step("ceiling", new CeilingRows());
      try (LocalRuntime rt =
          LocalRuntime.builder()
              .port(0)
              .queueWait(Duration.ofSeconds(60))
              .eventLogCapacity(4096)
              .start()) {
        sitting.runtime(rt);
        step("64", new EchoRows());
        sitting.closeCeiling(); // only rows 1 and 2 use it
        step("1000", new Echo1000Row());
        step("10k", new TenThousandRow());
        step("durable", new DurableRows());
        step("start", new StartRow());
      } finally {
        sitting.runtime(null);
      }
      if (options.runtimeBin() != null) {
        step("realrt", new RealRuntimeRows());
        step("frames", new FrameRows());
        step("cold", new ColdRow());
      } else if (options.only().isEmpty() || options.names("realrt")) {
        System.err.println(
            "bench: real-runtime rows (8a-8e) skipped: they run with"
                + " --runtime-bin PATH --peer-bin PATH");
      }
      // its windows are set by the lease TTL and the settle time, not by counts: ~40 s
      stepUnlessQuick(
          "reload",
          new ReloadRows(),
          "reload rows (7a-7c) left out of a --quick" + " run; --quick --only reload runs them");
      step("list", new ListHandlersRow());
      // its hold is 60 s whatever the counts: ~1.5 min
      stepUnlessQuick(
          "inflight",
          new HundredThousandRow(),
          "100 000-in-flight row (9) left out"
              + " of a --quick run; --quick --only inflight runs it");
    } finally {
      sitting.closeCeiling();
    }

    report.meta.put("loadavg_end", loadavg());
    report.meta.put("failures", failures);
    System.out.println();
    System.out.printf(
        Locale.ROOT,
        "phrony-worker bench (%s), %s, %d cores, load average %s ->" + " %s%n",
        quick ? "quick" : "full",
        report.meta.get("java"),
        Runtime.getRuntime().availableProcessors(),
        report.meta.get("loadavg_start"),
        loadavg());
    System.out.println();
    report.print(System.out);
    System.out.println();
    report.writeJson(options.out());
    System.out.println("written: " + options.out());
    if (!failures.isEmpty()) {
      System.out.println("scenarios that could not run: " + failures);
      return 1;
    }
    return 0;
  }

  /** Runs {@code scenario} if {@code --only} wants step {@code name}; a failure is a row. */
  private void step(String name, Scenario scenario) {
    if (!options.runs(name)) {
      return;
    }
    try {
      scenario.run(sitting);
    } catch (Exception | AssertionError e) {
      failures.add(name + ": " + e);
      System.err.println("bench: " + name + " failed: " + e);
      e.printStackTrace();
      report.add(
          new Report.Row(
              "!",
              name,
              "failed: " + e.getMessage(),
              "",
              "",
              null,
              Map.of("error", String.valueOf(e))));
    }
  }

  /**
   * {@link #step}, except in a {@code --quick} run whose {@code --only} does not name it, where a
   * run of all steps says so ({@code leftOut}).
   */
  private void stepUnlessQuick(String name, Scenario scenario, String leftOut) {
    if (options.quick() && !options.names(name)) {
      if (options.only().isEmpty()) {
        System.err.println("bench: " + leftOut);
      }
      return;
    }
    step(name, scenario);
  }

  static String loadavg() {
    try {
      String[] p = Files.readString(Path.of("/proc/loadavg")).split(" ");
      return p[0] + " " + p[1] + " " + p[2];
    } catch (IOException e) {
      return "n/a";
    }
  }
}
