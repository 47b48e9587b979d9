package dev.phrony.worker.transport;

import io.netty.util.ResourceLeakDetector;

/**
 * Netty's buffer leak detector, off for a serving worker unless the operator set it ({@code
 * -Dio.netty.leakDetection.level=simple} in {@code PHRONY_WORKER_JAVA_OPTS} turns it back on).
 *
 * <p>Why: at its default level it wraps one buffer in 128 in a leak-aware class and records a stack
 * trace for it (a {@code Throwable} each: 110-230 a second on the Work I/O thread under load, per
 * JFR). The wrapper is a second class at every hot buffer call site, so the compiled call path
 * holds type checks, and the wrapper's first visit to a site the warm-up compiled without it
 * deoptimises that code under the real load. A fresh worker's first 20 000 calls at c=64 ran at a
 * median 54.1k calls/s over 18 runs with it off, 48.6k over 9 with it on ({@code bin/bench --only
 * cold}, row 8e in docs/benchmarks.md); warm rows 8a-8c unchanged. The test suite keeps the
 * detector at its default, so a leak in the worker's own code still shows there.
 */
public final class LeakDetection {
  private static final String LEVEL = "io.netty.leakDetection.level";
  private static final String LEGACY_LEVEL = "io.netty.leakDetectionLevel";

  private LeakDetection() {}

  /** Turns the detector off, unless a level was given as a system property. */
  public static void offUnlessSet() {
    if (System.getProperty(LEVEL) == null && System.getProperty(LEGACY_LEVEL) == null) {
      ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.DISABLED);
    }
  }
}
