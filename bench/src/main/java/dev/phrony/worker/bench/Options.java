package dev.phrony.worker.bench;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;

/**
 * What {@code bin/bench} was asked to run, resolved: the mode, the steps {@code --only} names
 * (empty: all), where things are, the warm-up and measured time of each figure, and the
 * real-runtime binaries (both null unless given).
 */
record Options(
    boolean quick,
    Set<String> only,
    Path dist,
    Path work,
    Path out,
    Duration warmup,
    Duration measure,
    Path runtimeBin,
    Path peerBin) {
  /** Paired rows: slices per figure in a full run, and the warm-up again before each slice. */
  static final int PAIRED_SLICES = 5;

  static final Duration SLICE_WARMUP = Duration.ofSeconds(1);

  Options {
    only = Set.copyOf(only);
  }

  /** Whether {@code step} runs: all do when {@code --only} names none. */
  boolean runs(String step) {
    return only.isEmpty()
        || only.contains(step)
        || step.equals("64")
            && (only.contains("c1") || only.contains("c64") || only.contains("s64"));
  }

  /** Whether {@code --only} names {@code step} itself (a quick run leaves some steps out). */
  boolean names(String step) {
    return only.contains(step);
  }

  /** Step 64's rows: all, or those {@code --only} names ({@code c1}, {@code c64}, {@code s64}). */
  boolean row(String name) {
    return only.isEmpty() || only.contains("64") || only.contains(name);
  }

  /** Measured slices per paired figure. */
  int slices() {
    return quick ? 1 : PAIRED_SLICES;
  }

  /** The warm-up again before each paired slice: {@link #SLICE_WARMUP}, at most the warm-up. */
  Duration rewarm() {
    return SLICE_WARMUP.compareTo(warmup) < 0 ? SLICE_WARMUP : warmup;
  }
}
