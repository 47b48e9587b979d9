package dev.phrony.worker.bench;

import dev.phrony.worker.testkit.realrt.RealRuntime;
import dev.phrony.worker.testkit.realrt.RealRuntime.ToolCall;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Row 8d (step {@code frames}): what crosses the wire per call between each worker and a runtime
 * binary of its own, counted by a {@link FrameRelay} in between: HTTP/2 frames by type each way,
 * DATA payload bytes, and the relay's reads (each at least one write of the sender). No goal: it
 * explains the CPU each side spends in rows 8a-8b (fewer frames and writes per call, less CPU).
 */
final class FrameRows implements Scenario {
  @Override
  public void run(Sitting s) throws Exception {
    long c64 = s.quick() ? 2_000 : 40_000;
    long c1 = s.quick() ? 200 : 4_000;
    Map<String, Object> f = new LinkedHashMap<>();
    List<String> lines = new ArrayList<>();
    for (String side : List.of("host", "peer")) {
      try (RealRuntime rt = RealRuntimeRows.startRuntime(s, "frames-" + side + ".log");
          FrameRelay relay = FrameRelay.to(rt.target());
          AutoCloseable worker =
              side.equals("host")
                  ? RealRuntimeRows.startHost(s, rt, relay.target(), "host-frames")
                  : RealRuntimeRows.startPeer(s, rt, relay.target(), "peer-frames", true)) {
        ToolCall noop = RealRuntimeRows.echo("s-bench-frames", Calls.ARGS);
        rt.dispatchBatch(
            noop,
            s.quick() ? 2_000 : 100_000,
            64,
            "frames-w-" + side + "-",
            Duration.ofMinutes(2)); // the host's JIT first: a cold host frames differently
        Map<String, Object> sideFigures = new LinkedHashMap<>();
        for (long[] load : List.of(new long[] {64, c64}, new long[] {1, c1})) {
          FrameRelay.Counts up0 = relay.workerToRuntime();
          FrameRelay.Counts down0 = relay.runtimeToWorker();
          RealRuntime.Batch b =
              rt.dispatchBatch(
                  noop,
                  load[1],
                  (int) load[0],
                  "frames-" + side + "-c" + load[0] + "-",
                  Duration.ofMinutes(2));
          FrameRelay.Counts up = relay.workerToRuntime().minus(up0);
          FrameRelay.Counts down = relay.runtimeToWorker().minus(down0);
          sideFigures.put(
              "c" + load[0],
              Map.of(
                  "calls",
                  b.ok(),
                  "worker_to_runtime",
                  up.perCall(b.ok()),
                  "runtime_to_worker",
                  down.perCall(b.ok())));
          if (load[0] == 64) {
            lines.add(
                String.format(
                    Locale.ROOT,
                    "%s c=64 per call: up %s; down %s",
                    side,
                    frameLine(up, b.ok()),
                    frameLine(down, b.ok())));
          }
        }
        f.put(side, sideFigures);
      }
    }
    s.report()
        .add(
            new Report.Row(
                "8d",
                "real runtime: HTTP/2 frames per call (relay-counted)",
                String.join("; ", lines),
                "",
                "",
                null,
                f));
  }

  /** "F frames (DATA d x B B, HEADERS h, WINDOW_UPDATE w, PING p), R reads". */
  private static String frameLine(FrameRelay.Counts c, long calls) {
    StringBuilder b =
        new StringBuilder(String.format(Locale.ROOT, "%.2f frames (", (double) c.frames() / calls));
    b.append(
        String.format(
            Locale.ROOT,
            "DATA %.2f x %.0f B",
            (double) c.frames("DATA") / calls,
            c.frames("DATA") == 0 ? 0.0 : (double) c.dataBytes() / c.frames("DATA")));
    for (String t : List.of("HEADERS", "WINDOW_UPDATE", "PING", "SETTINGS", "RST_STREAM")) {
      if (c.frames(t) > 0) {
        b.append(String.format(Locale.ROOT, ", %s %.3f", t, (double) c.frames(t) / calls));
      }
    }
    return b.append(String.format(Locale.ROOT, "), %.2f reads", (double) c.reads() / calls))
        .toString();
  }
}
