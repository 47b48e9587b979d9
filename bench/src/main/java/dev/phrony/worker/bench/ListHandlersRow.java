package dev.phrony.worker.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/** Row 6b (step {@code list}): {@code bin/phrony-worker list-handlers} over 100 plugins. */
final class ListHandlersRow implements Scenario {
  @Override
  public void run(Sitting s) throws Exception {
    Path gen = s.work().resolve("plugins-100");
    if (!Files.isDirectory(gen)) { // step start made them, unless --only left it out
      gen = Plugins.generate(s.work(), gen, 100);
    }
    int runs = s.quick() ? 1 : 3;
    double[] secs = new double[runs];
    for (int i = 0; i < runs; i++) {
      try (HostProcess h =
          s.hosts().command("list-" + i, List.of("list-handlers", "--plugins", gen.toString()))) {
        int rc = h.awaitExit(Hosts.START_TIMEOUT);
        secs[i] = (System.nanoTime() - h.startedNanos()) / 1e9;
        long rows = h.stdout().lines().filter(l -> l.startsWith("gen.tool-")).count();
        if (rc != 0 || rows != 100) {
          throw new IllegalStateException(
              "list-handlers exited "
                  + rc
                  + " listing "
                  + rows
                  + " of 100 handlers; stderr: "
                  + h.stderr());
        }
      }
    }
    double median = Stats.median(secs);
    s.report()
        .add(
            new Report.Row(
                "6b",
                "list-handlers, 100 plugins" + (runs > 1 ? " (median of " + runs + ")" : ""),
                String.format(Locale.ROOT, "%.2f s (runs: %s)", median, Format.seconds(secs)),
                String.format(Locale.ROOT, "%.2f s", median),
                "<= 2.0 s",
                median <= 2.0,
                Report.figures(
                    "median_s", median, "runs_s", Arrays.stream(secs).boxed().toList())));
  }
}
