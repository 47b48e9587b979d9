package dev.phrony.worker;

import java.util.Locale;

/**
 * A number and its noun, in the plural only when it is not one ("1 handler", "3 handlers"), and a
 * size in bytes as a person reads it ("104 B", "3.5 MiB").
 */
public final class Count {
  private Count() {}

  /** {@code n} and {@code noun}, with an "s" unless {@code n} is 1. */
  public static String of(long n, String noun) {
    return of(n, noun, noun + "s");
  }

  /** {@code n} and {@code one} or {@code many} ("1 entry", "2 entries"). */
  public static String of(long n, String one, String many) {
    return n + " " + (n == 1 ? one : many);
  }

  /** {@code bytes} in B, KiB or MiB. */
  public static String bytes(long bytes) {
    if (bytes < 1024) {
      return bytes + " B";
    }
    if (bytes < 1024 * 1024) {
      return String.format(Locale.ROOT, "%.1f KiB", bytes / 1024.0);
    }
    return String.format(Locale.ROOT, "%.1f MiB", bytes / (1024.0 * 1024));
  }
}
