package dev.phrony.worker.bench;

import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.worker.testkit.Event;
import dev.phrony.worker.testkit.LocalRuntime;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Row 6a (step {@code start}): from starting {@code bin/phrony-worker run} with 10 generated
 * plugins to the shared runtime sending it {@code registered}, and the host's CPU by then.
 */
final class StartRow implements Scenario {
  @Override
  public void run(Sitting s) throws Exception {
    Path work = s.work();
    Path gen = Plugins.generate(work, work.resolve("plugins-100"), 100);
    Path ten = Plugins.subset(gen, work.resolve("plugins-10"), 10);
    LocalRuntime runtime = s.runtime();
    int runs = s.quick() ? 3 : 5;
    double[] secs = new double[runs];
    double[] cpu = new double[runs];
    for (int i = 0; i < runs; i++) {
      String id = "bench-start-" + i;
      CompletableFuture<Long> registered = new CompletableFuture<>();
      try (LocalRuntime.Subscription sub =
              runtime.onEvent(
                  e -> {
                    if (Event.out(WorkServerMsg.BodyCase.REGISTERED).test(e)
                        && id.equals(e.workerId())) {
                      registered.complete(System.nanoTime());
                    }
                  });
          HostProcess host =
              s.hosts()
                  .command(
                      "start-" + i,
                      List.of(
                          "run",
                          "--plugins",
                          ten.toString(),
                          "--runtime",
                          runtime.target(),
                          "--worker-id",
                          id,
                          "--drain-timeout",
                          "5s",
                          "--http",
                          "none",
                          "--state-dir-in-build-output",
                          "--state-dir",
                          work.resolve("state-start").toString()))) {
        long at = registered.get(Hosts.START_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        cpu[i] = Proc.cpuNanos(host.pid()) / 1e9;
        secs[i] = (at - host.startedNanos()) / 1e9;
        if (!runtime.worker(id).map(w -> w.handlers().size() == 10).orElse(false)) {
          throw new IllegalStateException("start " + i + ": not 10 handlers registered");
        }
      }
    }
    double median = Stats.median(secs);
    s.report()
        .add(
            new Report.Row(
                "6a",
                "start to registered, 10 plugins (median of " + runs + ")",
                String.format(
                    Locale.ROOT,
                    "%.2f s (runs: %s); host CPU by then %.2f s",
                    median,
                    Format.seconds(secs),
                    Stats.median(cpu)),
                String.format(Locale.ROOT, "%.2f s", median),
                "<= 0.8 s",
                median <= 0.8,
                Report.figures(
                    "median_s",
                    median,
                    "runs_s",
                    Arrays.stream(secs).boxed().toList(),
                    "median_cpu_s",
                    Stats.median(cpu),
                    "cds",
                    System.getenv().getOrDefault("PHRONY_WORKER_CDS", "auto"))));
  }
}
