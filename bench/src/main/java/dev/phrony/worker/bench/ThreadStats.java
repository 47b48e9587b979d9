package dev.phrony.worker.bench;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * Per-thread CPU time and context switches of a process, from {@code /proc/<pid>/task}: where a
 * call's CPU goes, and how many times threads were put to sleep and woken for it (a voluntary
 * switch is a thread blocking; each is later undone by a wake-up). Threads are grouped by name
 * without their trailing numbers ({@code ForkJoinPool-1-worker-3} counts as {@code
 * ForkJoinPool-1-worker-}).
 */
final class ThreadStats {
  /** One group of threads: CPU in ns, voluntary and involuntary switches. */
  record Group(long cpuNanos, long voluntary, long involuntary) {
    Group plus(Group o) {
      return new Group(cpuNanos + o.cpuNanos, voluntary + o.voluntary, involuntary + o.involuntary);
    }

    Group minus(Group o) {
      return new Group(cpuNanos - o.cpuNanos, voluntary - o.voluntary, involuntary - o.involuntary);
    }
  }

  private ThreadStats() {}

  /** The process's threads now, by group; empty when /proc cannot be read. */
  static Map<String, Group> sample(long pid) {
    Map<String, Group> groups = new HashMap<>();
    Path tasks = Path.of("/proc", Long.toString(pid), "task");
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(tasks)) {
      for (Path task : ds) {
        try {
          String stat = Files.readString(task.resolve("stat"));
          String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
          long cpu = Proc.statCpuNanos(stat);
          long vol = 0;
          long invol = 0;
          for (String line : Files.readAllLines(task.resolve("status"))) {
            if (line.startsWith("voluntary_ctxt_switches:")) {
              vol = Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
            } else if (line.startsWith("nonvoluntary_ctxt_switches:")) {
              invol = Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
            }
          }
          groups.merge(name.replaceAll("\\d+$", ""), new Group(cpu, vol, invol), Group::plus);
        } catch (IOException | RuntimeException e) {
          // the thread ended while being read
        }
      }
    } catch (IOException e) {
      return Map.of();
    }
    return groups;
  }

  /** What each group did between two samples (groups absent from {@code before} start at 0). */
  static Map<String, Group> delta(Map<String, Group> before, Map<String, Group> after) {
    Map<String, Group> d = new TreeMap<>();
    Group zero = new Group(0, 0, 0);
    after.forEach((k, v) -> d.put(k, v.minus(before.getOrDefault(k, zero))));
    return d;
  }

  /** All groups taken together. */
  static Group total(Map<String, Group> groups) {
    return groups.values().stream().reduce(new Group(0, 0, 0), Group::plus);
  }
}
