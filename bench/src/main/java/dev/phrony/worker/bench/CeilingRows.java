package dev.phrony.worker.bench;

import java.util.Locale;

/**
 * Rows 1a and 1b (step {@code ceiling}): the bare grpc-java stream between this JVM and a child
 * JVM, ping-pong and pipelined, as the reference the host's no-op rows are held against.
 */
final class CeilingRows implements Scenario {
  @Override
  public void run(Sitting s) throws Exception {
    Ceiling ceiling = s.ceiling();
    s.report()
        .add(
            row(
                "1a",
                "ceiling: bare gRPC stream, ping-pong",
                ceiling.run(1, s.warmup(), s.measure())));
    s.report()
        .add(
            row(
                "1b",
                "ceiling: bare gRPC stream, pipelined (64)",
                ceiling.run(64, s.warmup(), s.measure())));
  }

  private static Report.Row row(String id, String scenario, Ceiling.Run run) {
    return new Report.Row(
        id,
        scenario,
        String.format(
            Locale.ROOT,
            "%s round trips/s, p50 %s, p99 %s, CPU/call client %s + server %s",
            Format.rate(run.perSecond()),
            Format.ms(run.p50Ms()),
            Format.ms(run.p99Ms()),
            Format.us(run.clientCpuUs()),
            Format.us(run.serverCpuUs())),
        "reference",
        "",
        null,
        Report.figures(
            "per_s",
            run.perSecond(),
            "p50_ms",
            run.p50Ms(),
            "p99_ms",
            run.p99Ms(),
            "client_cpu_us_per_call",
            run.clientCpuUs(),
            "server_cpu_us_per_call",
            run.serverCpuUs(),
            "calls",
            run.calls()));
  }
}
