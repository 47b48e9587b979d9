package dev.phrony.worker.bench;

import dev.phrony.worker.testkit.realrt.RealRuntime;
import dev.phrony.worker.testkit.realrt.RealRuntime.ToolCall;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.IntStream;
import java.util.stream.Stream;

/**
 * Row 8e (step {@code cold}): a fresh worker thrown into load from {@code registered}, as a pod
 * added by an autoscaler or a restart is. The first {@value #BATCHES} batches of {@value #BATCH}
 * no-op calls at c=64, each on a runtime of its own, for the host and for the {@code --peer-bin}
 * worker; their rates batch by batch and over the first {@code BATCHES x BATCH} calls. The host is
 * started as a user starts it: a copy of the distribution (jars and their times kept, no {@code
 * var/}), so with the caches it ships and none that an earlier row left behind. Runs: 3 (quick: 1),
 * host and peer in an order that alternates from run to run; the figures are medians over runs.
 */
final class ColdRow implements Scenario {
  static final int BATCHES = 5;
  static final int BATCH = 20_000;
  private static final int CONCURRENCY = 64;

  /**
   * One worker's first batches in one run: calls/s of each, all of them as one figure, and the
   * seconds from its process's start to the last batch's last answer (start-up and warm-up in).
   */
  record Curve(List<Double> perSecond, double firstCalls, double startToLastS, String load) {}

  @Override
  public void run(Sitting s) throws Exception {
    for (Path bin : List.of(s.options().runtimeBin(), s.options().peerBin())) {
      if (!Files.isRegularFile(bin) || !Files.isExecutable(bin)) {
        throw new IllegalArgumentException(bin + " is not an executable file");
      }
    }
    int runs = s.quick() ? 1 : 3;
    List<Curve> host = new ArrayList<>();
    List<Curve> peer = new ArrayList<>();
    for (int r = 0; r < runs; r++) {
      Path dist = freshCopy(s.options().dist(), s.work().resolve("cold-dist-" + r));
      Hosts hosts = new Hosts(dist, s.work());
      int run = r;
      for (int k = 0; k < 2; k++) {
        if ((r + k) % 2 == 0) {
          host.add(
              curve(
                  s,
                  "host",
                  r,
                  rt -> RealRuntimeRows.startHost(hosts, rt, rt.target(), "cold-" + run)));
        } else {
          peer.add(
              curve(
                  s,
                  "peer",
                  r,
                  rt -> RealRuntimeRows.startPeer(s, rt, rt.target(), "peer-cold-" + run, true)));
        }
      }
    }
    List<Double> ratios = new ArrayList<>();
    List<Double> hostBatches = new ArrayList<>();
    List<Double> peerBatches = new ArrayList<>();
    for (int b = 0; b < BATCHES; b++) {
      int i = b;
      hostBatches.add(Stats.median(host.stream().map(c -> c.perSecond().get(i)).toList()));
      peerBatches.add(Stats.median(peer.stream().map(c -> c.perSecond().get(i)).toList()));
      ratios.add(
          Stats.median(
              IntStream.range(0, runs)
                  .mapToObj(r -> host.get(r).perSecond().get(i) / peer.get(r).perSecond().get(i))
                  .toList()));
    }
    double hostFirst = Stats.median(host.stream().map(Curve::firstCalls).toList());
    double peerFirst = Stats.median(peer.stream().map(Curve::firstCalls).toList());
    List<Double> firstRatios =
        IntStream.range(0, runs)
            .mapToObj(r -> host.get(r).firstCalls() / peer.get(r).firstCalls())
            .toList();
    double firstRatio = Stats.median(firstRatios);
    double hostWhole = Stats.median(host.stream().map(Curve::startToLastS).toList());
    double peerWhole = Stats.median(peer.stream().map(Curve::startToLastS).toList());
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("batch_calls", BATCH);
    f.put("concurrency", CONCURRENCY);
    f.put("runs", runs);
    f.put("host_batches_per_s", hostBatches);
    f.put("peer_batches_per_s", peerBatches);
    f.put("batch_ratios", ratios);
    f.put("host_first_per_s", hostFirst);
    f.put("peer_first_per_s", peerFirst);
    f.put("first_ratio", firstRatio);
    f.put("first_ratios", firstRatios);
    f.put("host_start_to_last_s", hostWhole);
    f.put("peer_start_to_last_s", peerWhole);
    f.put("host_runs", host);
    f.put("peer_runs", peer);
    String first = Format.rate(hostFirst) + " vs " + Format.rate(peerFirst);
    s.report()
        .add(
            new Report.Row(
                "8e",
                String.format(
                    Locale.ROOT,
                    "real runtime: cold, first %d x %d no-op calls at c=%d from registered",
                    BATCHES,
                    BATCH,
                    CONCURRENCY),
                "host/peer by batch "
                    + ratios.stream().map(x -> String.format(Locale.ROOT, "%.2f", x)).toList()
                    + "; host "
                    + hostBatches.stream().map(Format::rate).toList()
                    + " calls/s; first "
                    + BATCHES * BATCH
                    + " calls "
                    + first
                    + String.format(
                        Locale.ROOT,
                        "; process start to answer %d: host %.1f s, peer %.1f s",
                        BATCHES * BATCH,
                        hostWhole,
                        peerWhole),
                String.format(
                    Locale.ROOT,
                    "batch 1 %.2fx, first %d %.2fx peer%s",
                    ratios.get(0),
                    BATCHES * BATCH,
                    firstRatio,
                    Format.spread(firstRatios)),
                ">= 1.00x",
                Double.isNaN(firstRatio) ? null : ratios.get(0) >= 1.0 && firstRatio >= 1.0,
                f));
  }

  /** How a side's worker is started on its runtime (registered when it returns). */
  private interface Starter {
    AutoCloseable start(RealRuntime rt) throws Exception;
  }

  /** One side's run: a runtime and a worker of their own, the batches, both stopped. */
  private static Curve curve(Sitting s, String side, int run, Starter starter) throws Exception {
    String load = Bench.loadavg();
    try (RealRuntime rt = RealRuntimeRows.startRuntime(s, "realrt-cold-" + side + run + ".log")) {
      long started = System.nanoTime();
      try (AutoCloseable worker = starter.start(rt)) {
        return batches(side, run, rt, started, load);
      }
    }
  }

  private static Curve batches(String side, int run, RealRuntime rt, long started, String load)
      throws Exception {
    ToolCall noop = RealRuntimeRows.echo("s-bench-cold", Calls.ARGS);
    List<Double> rates = new ArrayList<>();
    double ms = 0;
    long ok = 0;
    for (int b = 0; b < BATCHES; b++) {
      RealRuntime.Batch batch =
          rt.dispatchBatch(
              noop,
              BATCH,
              CONCURRENCY,
              "cold-" + side + run + "-" + b + "-",
              Duration.ofSeconds(120));
      if (batch.ok() != BATCH) {
        throw new IllegalStateException(
            side + " cold batch " + (b + 1) + ": " + batch.ok() + " of " + BATCH + " ok");
      }
      rates.add(batch.perSecond());
      ms += batch.elapsedMs();
      ok += batch.ok();
    }
    Curve c = new Curve(rates, ok / (ms / 1e3), (System.nanoTime() - started) / 1e9, load);
    System.err.printf(
        Locale.ROOT,
        "bench: cold %s run %d (load %s): %s, first %d %s; process start to last answer %.1f"
            + " s%n",
        side,
        run + 1,
        load,
        rates.stream().map(Format::rate).toList(),
        ok,
        Format.rate(c.firstCalls()),
        c.startToLastS());
    return c;
  }

  /**
   * A copy of the distribution at {@code to} as a user unpacks it: files with their times (a class
   * archive is only valid with the jars it was made from), without {@code var/} (the caches earlier
   * runs made).
   */
  static Path freshCopy(Path dist, Path to) throws IOException {
    try (Stream<Path> files = Files.walk(dist)) {
      for (Path p : (Iterable<Path>) files::iterator) {
        Path rel = dist.relativize(p);
        if (rel.startsWith("var")) {
          continue;
        }
        Path target = to.resolve(rel.toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else {
          Files.copy(p, target, StandardCopyOption.COPY_ATTRIBUTES);
        }
      }
    }
    return to;
  }
}
