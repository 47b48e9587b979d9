package dev.phrony.worker.warmup;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;

/**
 * Waits, after a warm-up's calls, until the JIT has caught up. Under the warm-up's full load the
 * compiler threads get a fraction of two cores: the C2 queue was seen 4 s behind at the end of a
 * 200 000-call warm-up (JIT log, row 8e), and the worker then compiled its hottest paths (the frame
 * reader, the deframer, the stream's listener) under the runtime's first load. It is caught up when
 * the JIT's compile time grows by less than 2% of the time for {@link #QUIET_WINDOWS} windows in a
 * row: the JIT adds a compile's time when the compile ends, so a long one looks quiet until then
 * (hence several windows), while a queue of them never does.
 */
final class JitSettle {
  static final Duration WINDOW = Duration.ofMillis(100);
  static final int QUIET_WINDOWS = 5;

  private final LongSupplier compileMillis;
  private final Duration window;

  /** Reads the JVM's compile time; null when this JVM does not keep it. */
  static JitSettle ofThisJvm() {
    CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
    if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
      return null;
    }
    return new JitSettle(jit::getTotalCompilationTime, WINDOW);
  }

  /**
   * @param compileMillis the JIT's compile time so far, in milliseconds
   * @param window how often it is read (quiet: it grew by less than 2% of this)
   */
  JitSettle(LongSupplier compileMillis, Duration window) {
    this.compileMillis = compileMillis;
    this.window = window;
  }

  /**
   * Returns once the JIT is quiet, {@code max} has passed or {@code stopped} completes, whichever
   * comes first; how long that took.
   */
  Duration await(Duration max, CompletableFuture<?> stopped) throws InterruptedException {
    long t0 = System.nanoTime();
    long last = compileMillis.getAsLong();
    int quiet = 0;
    while (quiet < QUIET_WINDOWS && System.nanoTime() - t0 < max.toNanos()) {
      try {
        stopped.get(window.toNanos(), TimeUnit.NANOSECONDS);
        break; // the worker is stopping
      } catch (TimeoutException e) {
        // a window passed
      } catch (ExecutionException e) {
        break;
      }
      long now = compileMillis.getAsLong();
      quiet = (now - last) * 50 < window.toMillis() ? quiet + 1 : 0;
      last = now;
    }
    return Duration.ofNanos(System.nanoTime() - t0);
  }
}
