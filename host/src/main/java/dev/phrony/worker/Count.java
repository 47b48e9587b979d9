package dev.phrony.worker;

/** A number and its noun, in the plural only when it is not one: "1 handler", "3 handlers". */
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
}
