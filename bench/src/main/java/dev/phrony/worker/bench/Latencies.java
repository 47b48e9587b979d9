package dev.phrony.worker.bench;

import java.util.Arrays;
import java.util.List;

/** A growable array of nanosecond latencies, with percentiles over one or many of them. */
final class Latencies {
  private long[] values = new long[1024];
  private int size;

  void add(long nanos) {
    if (size == values.length) {
      values = Arrays.copyOf(values, size * 2);
    }
    values[size++] = nanos;
  }

  int size() {
    return size;
  }

  /** Percentiles (0..100) in milliseconds over all of {@code parts}; NaN when empty. */
  static double[] percentilesMs(List<Latencies> parts, double... ps) {
    int n = parts.stream().mapToInt(Latencies::size).sum();
    long[] all = new long[n];
    int i = 0;
    for (Latencies l : parts) {
      System.arraycopy(l.values, 0, all, i, l.size);
      i += l.size;
    }
    Arrays.sort(all);
    double[] out = new double[ps.length];
    for (int k = 0; k < ps.length; k++) {
      if (n == 0) {
        out[k] = Double.NaN;
        continue;
      }
      int idx = (int) Math.min(n - 1, Math.max(0, Math.ceil(ps[k] / 100.0 * n) - 1));
      out[k] = all[idx] / 1e6;
    }
    return out;
  }
}
