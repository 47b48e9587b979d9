package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class BackoffTest {
  @Test
  void window_doubles_to_the_cap_and_resets() {
    List<Long> bounds = new ArrayList<>();
    Backoff b =
        new Backoff(
            Duration.ofMillis(250),
            Duration.ofSeconds(30),
            bound -> {
              bounds.add(bound);
              return bound - 1; // the top of the window
            });
    for (int i = 0; i < 10; i++) {
      b.next();
    }
    assertThat(bounds)
        .containsExactly(251L, 501L, 1001L, 2001L, 4001L, 8001L, 16001L, 30001L, 30001L, 30001L);
    b.reset();
    assertThat(b.next()).isEqualTo(Duration.ofMillis(250));
  }

  @Test
  void full_jitter_can_be_zero() {
    Backoff b = new Backoff(Duration.ofMillis(250), Duration.ofSeconds(30), bound -> 0);
    assertThat(b.next()).isEqualTo(Duration.ZERO);
  }
}
