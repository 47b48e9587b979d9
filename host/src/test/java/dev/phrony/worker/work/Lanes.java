package dev.phrony.worker.work;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Stress tests' load: lanes on virtual threads, each making its calls one after the other. */
final class Lanes {
  private Lanes() {}

  /** One call of a lane: {@code i}th of lane {@code lane}, with the lane's own random source. */
  interface Body {
    void call(int lane, int i, SplittableRandom random) throws Exception;
  }

  /**
   * Runs {@code lanes} lanes of {@code callsEach} calls and waits for all (5 minutes at most); lane
   * {@code l}'s random source is seeded {@code seed * 1000 + l}, so a run can be repeated.
   */
  static void run(int lanes, int callsEach, long seed, Body body) throws Exception {
    List<CompletableFuture<Void>> all = new ArrayList<>();
    for (int lane = 0; lane < lanes; lane++) {
      int l = lane;
      SplittableRandom random = new SplittableRandom(seed * 1_000 + lane);
      all.add(
          CompletableFuture.runAsync(
              () -> {
                for (int i = 0; i < callsEach; i++) {
                  try {
                    body.call(l, i, random);
                  } catch (Exception e) {
                    throw new IllegalStateException("lane " + l + " call " + i, e);
                  }
                }
              },
              runnable -> Thread.ofVirtual().start(runnable)));
    }
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(5, TimeUnit.MINUTES);
  }
}
