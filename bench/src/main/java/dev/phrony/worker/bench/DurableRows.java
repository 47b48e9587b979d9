package dev.phrony.worker.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Rows 5a-5d (step {@code durable}): payments.process-payment (non_idempotent_write,
 * max_concurrency 16) with its results held in memory only ({@code --durability none}), then on
 * disk before they are sent (the default, {@code --durability writes}), and the disk alone ({@link
 * DiskCeiling}) as what caps the durable rows.
 */
final class DurableRows implements Scenario {
  private static final String TOOL = "payments.process-payment";

  @Override
  public void run(Sitting s) throws Exception {
    // The disk alone first, on the file system the hosts' state dirs are on.
    DiskCeiling.Run disk;
    try (DiskCeiling ceiling = new DiskCeiling(s.work().resolve("disk-ceiling"))) {
      disk = ceiling.run(16, s.warmup(), s.measure());
    }
    Report report = s.report();
    Driver.Result memory;
    try (HostProcess host =
        s.hosts().start(s.runtime(), "host-memory", List.of(), List.of("--durability", "none"))) {
      memory = payments(s, host, "mpay").run(16, s.warmup(), s.measure());
      report.add(
          new Report.Row(
              "5a",
              "host: payments, --durability none, concurrency 16",
              memory.line(),
              String.format(Locale.ROOT, "%s calls/s", Format.rate(memory.perSecond())),
              "",
              null,
              memory.figures()));
    }
    List<String> durableArgs =
        new ArrayList<>(List.of("--durability", "writes", "--http", "127.0.0.1:0"));
    // Concurrency 64 needs 64 slots: an operator's override, as in production.
    durableArgs.addAll(List.of("--handler", TOOL + "@1.0.0:max-concurrency=64"));
    try (HostProcess host = s.hosts().start(s.runtime(), "host-durable", List.of(), durableArgs)) {
      HostMetrics metrics = new HostMetrics(host);
      Driver.Result p = payments(s, host, "dpay").run(16, s.warmup(), s.measure());
      double perCall16 = flushesPerCall(metrics);
      Map<String, Object> f = p.figures();
      double ratio = p.perSecond() / memory.perSecond();
      double toDisk = p.perSecond() / disk.perSecond();
      f.put("ratio_to_memory", ratio);
      f.put("ratio_to_disk_ceiling", toDisk);
      f.put("fsyncs_per_call", perCall16);
      report.add(
          new Report.Row(
              "5b",
              "host: payments, --durability writes (durable), conc. 16",
              p.line() + String.format(Locale.ROOT, ", %.2f fsyncs/call", perCall16),
              String.format(
                  Locale.ROOT,
                  "%s calls/s (%.2fx memory, %.2fx 5d)",
                  Format.rate(p.perSecond()),
                  ratio,
                  toDisk),
              ">= 0.5x memory",
              ratio >= 0.5,
              f));
      Driver.Result p64 = payments(s, host, "dpay64").run(64, s.warmup(), s.measure());
      double perCall = flushesPerCall(metrics);
      Map<String, Object> f64 = p64.figures();
      f64.put("fsyncs_per_call_so_far", perCall);
      report.add(
          new Report.Row(
              "5c",
              "host: payments, --durability writes (durable), conc. 64",
              p64.line() + String.format(Locale.ROOT, ", %.2f fsyncs/call (both rows)", perCall),
              String.format(Locale.ROOT, "%s calls/s", Format.rate(p64.perSecond())),
              ">= 4 000 calls/s",
              p64.perSecond() >= 4000,
              f64));
    }
    // After 5a-5c so that it reads as a reference for them: what two flushes per call cost here.
    report.add(
        new Report.Row(
            "5d",
            "ceiling: disk alone, 16 callers x 2 flushes",
            String.format(
                Locale.ROOT,
                "%s calls/s, %.2f fsyncs/call",
                Format.rate(disk.perSecond()),
                disk.flushesPerCall()),
            String.format(
                Locale.ROOT,
                "reference: caps 5b at %.2fx memory",
                disk.perSecond() / memory.perSecond()),
            "",
            null,
            Report.figures(
                "per_s",
                disk.perSecond(),
                "calls",
                disk.calls(),
                "fsyncs_per_call",
                disk.flushesPerCall(),
                "ratio_to_memory",
                disk.perSecond() / memory.perSecond())));
  }

  private static Driver payments(Sitting s, HostProcess host, String tag) {
    return new Driver(
        s.runtime(), Calls.call(TOOL, "1.0.0", Calls.PAY_ARGS, "non_idempotent_write", tag), host);
  }

  /** Outbox device flushes per call the host has served so far. */
  private static double flushesPerCall(HostMetrics metrics) throws Exception {
    double flushes = metrics.sum("phrony_worker_outbox_flushes_total");
    double calls = metrics.sum("phrony_worker_invocations_total");
    return calls == 0 ? 0 : flushes / calls;
  }
}
