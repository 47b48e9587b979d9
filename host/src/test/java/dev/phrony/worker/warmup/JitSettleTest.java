package dev.phrony.worker.warmup;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class JitSettleTest {
  /** Windows of 10 ms: the JIT's compile time is read every 10 ms, quiet with no growth. */
  private static final Duration WINDOW = Duration.ofMillis(10);

  @Test
  void waits_while_the_jit_compiles_and_returns_after_enough_quiet_windows() throws Exception {
    AtomicInteger reads = new AtomicInteger();
    // Busy (5 ms more at each read) for the first 6 reads, then no more compile time.
    JitSettle jit = new JitSettle(() -> 5L * Math.min(reads.incrementAndGet(), 6), WINDOW);

    jit.await(Duration.ofSeconds(30), new CompletableFuture<>());

    // The first read, 5 busy windows, then the quiet ones in a row.
    assertThat(reads).hasValue(1 + 5 + JitSettle.QUIET_WINDOWS);
  }

  @Test
  void a_busy_window_starts_the_quiet_count_again() throws Exception {
    AtomicInteger reads = new AtomicInteger();
    // Quiet, quiet, busy (read 4), then quiet.
    JitSettle jit = new JitSettle(() -> reads.incrementAndGet() >= 4 ? 5 : 0, WINDOW);

    jit.await(Duration.ofSeconds(30), new CompletableFuture<>());

    assertThat(reads).hasValue(1 + 2 + 1 + JitSettle.QUIET_WINDOWS);
  }

  @Test
  void a_jit_that_never_settles_is_waited_for_at_most_max() throws Exception {
    AtomicInteger reads = new AtomicInteger();
    JitSettle jit = new JitSettle(() -> 5L * reads.incrementAndGet(), WINDOW);

    Duration took = jit.await(Duration.ofMillis(100), new CompletableFuture<>());

    assertThat(took).isGreaterThanOrEqualTo(Duration.ofMillis(100));
    assertThat(reads.get()).isLessThan(1000); // it waited a window between reads
  }

  @Test
  void a_stopping_worker_ends_the_wait_at_once() throws Exception {
    AtomicInteger reads = new AtomicInteger();
    JitSettle jit = new JitSettle(() -> 5L * reads.incrementAndGet(), WINDOW);

    jit.await(Duration.ofMinutes(5), CompletableFuture.completedFuture(null));

    assertThat(reads).hasValue(1); // the first read only: no window was waited
  }
}
