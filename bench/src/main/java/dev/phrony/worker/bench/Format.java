package dev.phrony.worker.bench;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/** How the table writes figures for people: one place, so that every row reads alike. */
final class Format {
  private Format() {}

  /** Calls per second with a space between thousands: "12 345". */
  static String rate(double perSecond) {
    return String.format(Locale.ROOT, "%,.0f", perSecond).replace(',', ' ');
  }

  static String ms(double v) {
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, v < 10 ? "%.2f ms" : "%.1f ms", v);
  }

  static String us(double v) {
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, v < 10 ? "%.1f us" : "%.0f us", v);
  }

  static String mib(double v) {
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.0f", v);
  }

  /** Runs in seconds: "1.23 1.30 1.28". */
  static String seconds(double[] s) {
    return String.join(
        " ", Arrays.stream(s).mapToObj(v -> String.format(Locale.ROOT, "%.2f", v)).toList());
  }

  static String human(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
  }

  /** " (slices LOW-HIGH)" when there is more than one, else nothing. */
  static String spread(List<Double> ratios) {
    if (ratios.size() < 2) {
      return "";
    }
    return String.format(
        Locale.ROOT,
        " (slices %.2f-%.2f)",
        ratios.stream().mapToDouble(Double::doubleValue).min().orElseThrow(),
        ratios.stream().mapToDouble(Double::doubleValue).max().orElseThrow());
  }
}
