package dev.phrony.worker.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The host, the two stand-in peers and (optionally) the ceiling, measured in alternating slices of
 * the measured time, so a change in what else the machine runs hits all alike; a ratio of figures
 * taken a minute apart moved by 10% from run to run here.
 *
 * <p>A first round only warms up: each for the whole warm-up, nothing counted. Measured, it made
 * the worker that went first pay for the runtime's JVM still compiling its code for this
 * concurrency: that worker's first slice came out 25-45% below its later ones, whichever worker it
 * was. Then each measured round warms each up again for {@link Options#SLICE_WARMUP} (at most the
 * warm-up) and measures one slice, the ceiling first, the three workers in an order rotated from
 * round to round, so none always follows the ceiling (which runs its server in this JVM too) or the
 * same peer.
 *
 * @param ceiling the ceiling's round trips per second; NaN when it was not measured
 */
record Paired(Driver.Result host, double ceiling, Driver.Result inline, Driver.Result threads) {

  static Paired measure(
      Sitting s, int concurrency, Driver host, Driver inline, Driver threads, boolean withCeiling)
      throws Exception {
    Ceiling c = withCeiling ? s.ceiling() : null;
    int slices = s.options().slices();
    Duration slice = s.measure().dividedBy(slices);
    Duration rewarm = s.options().rewarm();
    List<Driver> workers = List.of(host, inline, threads);
    List<List<Driver.Slice>> measured =
        List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
    if (c != null) {
      c.run(concurrency, s.warmup(), Duration.ZERO);
    }
    for (Driver w : workers) {
      w.slice(concurrency, s.warmup(), Duration.ZERO);
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
    return new Paired(
        Driver.Result.of(measured.get(0)),
        c == null ? Double.NaN : reference / slices,
        Driver.Result.of(measured.get(1)),
        Driver.Result.of(measured.get(2)));
  }

  /** Rows {@code ID-ts} and {@code ID-go}: the host against each stand-in measured beside it. */
  void addPeerRows(
      Report report, String id, String scenario, double goalInline, double goalThreads) {
    report.add(
        peerRow(
            id + "-ts",
            scenario + " vs inline stand-in (TypeScript shape)",
            host,
            inline,
            "inline stand-in",
            goalInline));
    report.add(
        peerRow(
            id + "-go",
            scenario + " vs thread-per-call stand-in (Go shape)",
            host,
            threads,
            "thread-per-call stand-in",
            goalThreads));
  }

  private static Report.Row peerRow(
      String id,
      String scenario,
      Driver.Result host,
      Driver.Result peer,
      String peerName,
      double goal) {
    double ratio = host.perSecond() / peer.perSecond();
    List<Double> sliceRatios = Stats.ratios(host.slicesPerSecond(), peer.slicesPerSecond());
    Map<String, Object> f = peer.figures();
    f.put("host_per_s", host.perSecond());
    f.put("host_slices_per_s", host.slicesPerSecond());
    f.put("ratio", ratio);
    f.put("slice_ratios", sliceRatios);
    return new Report.Row(
        id,
        scenario,
        "peer: " + peer.line(),
        String.format(Locale.ROOT, "host %.2fx %s%s", ratio, peerName, Format.spread(sliceRatios)),
        String.format(Locale.ROOT, ">= %.2fx", goal),
        Double.isNaN(ratio) ? null : ratio >= goal,
        f);
  }

  /** A host row: its calls/s against a reference rate ({@code refName}), the goal a ratio. */
  static Report.Row hostRow(
      String id, String scenario, Driver.Result r, double reference, String refName, double goal) {
    double ratio = r.perSecond() / reference;
    Map<String, Object> f = r.figures();
    f.put("reference", refName);
    f.put("reference_per_s", reference);
    f.put("ratio", ratio);
    return new Report.Row(
        id,
        scenario,
        r.line(),
        String.format(Locale.ROOT, "%.2fx %s", ratio, refName),
        String.format(Locale.ROOT, ">= %.2fx", goal),
        Double.isNaN(ratio) ? null : ratio >= goal,
        f);
  }
}
