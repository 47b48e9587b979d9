package dev.phrony.worker.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads a host's {@code -Xlog:gc:file=...:timemillis} log. The heap allocated between two
 * collections is the next one's "before" minus this one's "after"; over a window that gives the
 * host's allocation rate, which (per call) does not move when other processes share the cores. Over
 * the whole log it gives the heap's peaks and what a forced full GC left (rows 4 and 9).
 */
final class GcLog {
  private static final Pattern LINE =
      Pattern.compile("^\\[(\\d+)ms\\].*Pause (?:Young|Full).*?(\\d+)([KMG])->(\\d+)([KMG])\\(");

  /** Any collection's "before->after(size) time": pauses and concurrent phases alike. */
  private static final Pattern ANY =
      Pattern.compile("(\\d+)([KMG])->(\\d+)([KMG])\\((\\d+)([KMG])\\)\\s+([\\d.]+)ms");

  private static final double MIB = 1024 * 1024;

  /**
   * The whole log: the most heap used before and left after any collection, what the last
   * collection forced by {@code jcmd} or {@code System.gc()} left (the live heap), and the pauses.
   * NaN where the log has no such line.
   */
  record Summary(
      double maxBeforeMib,
      double maxAfterMib,
      double systemGcAfterMib,
      int pauses,
      double pauseMs) {}

  private record Pause(long atMs, double beforeBytes, double afterBytes) {}

  private GcLog() {}

  /** Bytes allocated per second between the first and last pause inside the window; NaN if < 2. */
  static double allocatedBytesPerSecond(Path log, long fromMs, long untilMs) {
    if (log == null || !Files.exists(log)) {
      return Double.NaN;
    }
    List<Pause> in = new ArrayList<>();
    try {
      for (String line : Files.readAllLines(log)) {
        Matcher m = LINE.matcher(line);
        if (m.find()) {
          long at = Long.parseLong(m.group(1));
          if (at >= fromMs && at <= untilMs) {
            in.add(new Pause(at, bytes(m.group(2), m.group(3)), bytes(m.group(4), m.group(5))));
          }
        }
      }
    } catch (IOException e) {
      return Double.NaN;
    }
    if (in.size() < 2) {
      return Double.NaN;
    }
    double allocated = 0;
    for (int i = 1; i < in.size(); i++) {
      allocated += in.get(i).beforeBytes() - in.get(i - 1).afterBytes();
    }
    long spanMs = in.get(in.size() - 1).atMs() - in.get(0).atMs();
    return spanMs <= 0 ? Double.NaN : allocated / (spanMs / 1000.0);
  }

  static Summary summary(Path log) throws IOException {
    double before = Double.NaN;
    double after = Double.NaN;
    double system = Double.NaN;
    int pauses = 0;
    double ms = 0;
    if (log == null || !Files.exists(log)) {
      return new Summary(before, after, system, 0, 0);
    }
    for (String line : Files.readAllLines(log)) {
      Matcher m = ANY.matcher(line);
      if (!m.find()) {
        continue;
      }
      double b = bytes(m.group(1), m.group(2)) / MIB;
      double a = bytes(m.group(3), m.group(4)) / MIB;
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
    return new Summary(before, after, system, pauses, ms);
  }

  private static double bytes(String n, String unit) {
    double v = Double.parseDouble(n);
    return switch (unit) {
      case "K" -> v * 1024;
      case "G" -> v * 1024 * 1024 * 1024;
      default -> v * 1024 * 1024;
    };
  }
}
