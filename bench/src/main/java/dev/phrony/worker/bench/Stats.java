package dev.phrony.worker.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** The few statistics the rows take over runs and slices. */
final class Stats {
  private Stats() {}

  static double median(double[] s) {
    double[] c = s.clone();
    Arrays.sort(c);
    return c.length % 2 == 1 ? c[c.length / 2] : (c[c.length / 2 - 1] + c[c.length / 2]) / 2;
  }

  /** The median; NaN when there are none. */
  static double median(List<Double> values) {
    return values.isEmpty()
        ? Double.NaN
        : median(values.stream().mapToDouble(Double::doubleValue).toArray());
  }

  /**
   * Each rate of {@code a} over the rate of {@code b} measured in the same round (paired slices),
   * to three decimals.
   */
  static List<Double> ratios(List<Double> a, List<Double> b) {
    List<Double> ratios = new ArrayList<>();
    for (int i = 0; i < Math.min(a.size(), b.size()); i++) {
      ratios.add(Math.round(1000 * a.get(i) / b.get(i)) / 1000.0);
    }
    return ratios;
  }
}
