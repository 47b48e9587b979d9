package dev.phrony.worker;

import java.util.Optional;

/**
 * The known word a typo most likely meant, for "did you mean" hints: a config key, a command, a
 * flag.
 */
public final class NearMiss {
  private NearMiss() {}

  /**
   * The word of {@code known} closest to {@code typed} (Levenshtein distance), when it is close
   * enough to be the one meant: at most 2 edits, or a quarter of the word for longer ones.
   */
  public static Optional<String> closest(String typed, Iterable<String> known) {
    String best = null;
    int bestDistance = Integer.MAX_VALUE;
    for (String k : known) {
      int d = distance(typed, k);
      if (d < bestDistance) {
        best = k;
        bestDistance = d;
      }
    }
    return best != null && bestDistance <= Math.max(2, typed.length() / 4)
        ? Optional.of(best)
        : Optional.empty();
  }

  /** Levenshtein distance; the words are short. */
  private static int distance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      prev[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
      }
      int[] swap = prev;
      prev = cur;
      cur = swap;
    }
    return prev[b.length()];
  }
}
