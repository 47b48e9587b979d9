package dev.phrony.worker.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class ManualClockTest {

  @Test
  void movesOnlyWhenTold() {
    ManualClock clock = new ManualClock(Instant.EPOCH);

    assertThat(clock.instant()).isEqualTo(Instant.EPOCH);
    assertThat(clock.advance(Duration.ofSeconds(5))).isEqualTo(Instant.EPOCH.plusSeconds(5));
    assertThat(clock.millis()).isEqualTo(5_000);
    clock.set(Instant.EPOCH.plusSeconds(1));
    assertThat(clock.instant()).isEqualTo(Instant.EPOCH.plusSeconds(1));
    assertThatThrownBy(() -> clock.advance(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
