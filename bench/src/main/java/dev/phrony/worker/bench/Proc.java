package dev.phrony.worker.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * What Linux's {@code /proc} says about a process (CPU time, memory), read the same way for every
 * process the bench measures, its own JVM included; and stopping a child process.
 */
final class Proc {
  /** USER_HZ; 100 on every Linux this runs on (sysconf is not reachable from Java). */
  private static final long NANOS_PER_TICK = 1_000_000_000L / 100;

  private Proc() {}

  /** CPU time (user + system) of {@code pid} so far, in ns; -1 when unknown. */
  static long cpuNanos(long pid) {
    try {
      return statCpuNanos(Files.readString(Path.of("/proc", Long.toString(pid), "stat")));
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /** utime + stime, in ns, of a {@code stat} file's text (a process's or one of its threads'). */
  static long statCpuNanos(String stat) {
    // Fields after the command (which may hold spaces) start at state, field 3.
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * NANOS_PER_TICK; // fields 14, 15
  }

  /** A {@code /proc/<pid>/status} field in KiB (VmRSS, VmHWM), or -1. */
  static long statusKb(long pid, String field) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
        if (line.startsWith(field + ":")) {
          return Long.parseLong(line.substring(field.length() + 1).trim().split("\\s+")[0]);
        }
      }
    } catch (IOException | RuntimeException e) {
      // not Linux, or the process is gone
    }
    return -1;
  }

  /** SIGTERM, then SIGKILL if it has not exited within {@code grace}. */
  static void stop(Process process, Duration grace) throws InterruptedException {
    if (!process.isAlive()) {
      return;
    }
    process.destroy();
    if (!process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
      process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
  }
}
