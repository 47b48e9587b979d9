package dev.phrony.worker.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What rows 4 and 9 and the allocation figures read from a host's {@code -Xlog:gc} file. */
class GcLogTest {
  private static final List<String> LOG =
      List.of(
          "[1000ms] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 3.000ms",
          "[1100ms] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 30M->6M(256M) 2.500ms",
          "[1150ms] GC(2) Concurrent Mark Cycle 5.000ms",
          "[1200ms] GC(3) Pause Full (Diagnostic Command) 2048K->1M(1G) 20.000ms");

  @Test
  void summary_takes_the_peaks_the_forced_gcs_live_heap_and_the_pauses(@TempDir Path dir)
      throws Exception {
    Path log = Files.write(dir.resolve("gc.log"), LOG);

    GcLog.Summary s = GcLog.summary(log);

    assertThat(s.maxBeforeMib()).isEqualTo(30.0);
    assertThat(s.maxAfterMib()).isEqualTo(6.0);
    assertThat(s.systemGcAfterMib()).isEqualTo(1.0);
    assertThat(s.pauses()).isEqualTo(3);
    assertThat(s.pauseMs()).isCloseTo(25.5, within(1e-9));
  }

  @Test
  void summary_of_no_log_is_unknown_not_zero(@TempDir Path dir) throws Exception {
    GcLog.Summary s = GcLog.summary(dir.resolve("absent.log"));

    assertThat(s.maxBeforeMib()).isNaN();
    assertThat(s.systemGcAfterMib()).isNaN();
    assertThat(s.pauses()).isZero();
  }

  @Test
  void allocation_rate_is_what_was_allocated_between_pauses_in_the_window(@TempDir Path dir)
      throws Exception {
    Path log = Files.write(dir.resolve("gc.log"), LOG);

    // 30M before the second pause minus 4M after the first, over 100 ms
    assertThat(GcLog.allocatedBytesPerSecond(log, 1000, 1100))
        .isCloseTo(26 * 1024 * 1024 / 0.1, within(1.0));
    assertThat(GcLog.allocatedBytesPerSecond(log, 1000, 1050)).isNaN(); // one pause: unknown
  }
}
