package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.worker.transport.Transport;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class WorkOptionsTest {
  private static final WorkerIdentity ID = new WorkerIdentity("w1", "", "");

  @Test
  void defaults_are_the_documented_ones() {
    assertThat(WorkOptions.defaults("rt:1", ID))
        .isEqualTo(
            new WorkOptions(
                "rt:1",
                ID,
                WorkOptions.DEFAULT_DRAIN_TIMEOUT,
                WorkOptions.DEFAULT_MAX_INBOUND_BYTES,
                WorkOptions.DEFAULT_MAX_RESULT_BYTES,
                Optional.empty(),
                Duration.ofMillis(250),
                Duration.ofSeconds(30),
                Transport.plaintext(),
                false,
                WorkOptions.DEFAULT_MAX_RUNAWAY,
                1,
                false));
  }

  @Test
  void each_with_changes_its_setting_and_keeps_every_other() {
    Transport tls =
        new Transport(
            true, Optional.empty(), Optional.empty(), Optional.empty(), Optional.empty(), false);
    WorkOptions o =
        WorkOptions.defaults("rt:1", ID)
            .withDrainTimeout(Duration.ofSeconds(7))
            .withMaxInboundBytes(WorkOptions.RUNTIME_MAX_MESSAGE_BYTES)
            .withMaxResultBytes(1000)
            .withKeepAlive(Optional.of(Duration.ofMinutes(6)))
            .withBackoff(Duration.ofMillis(5), Duration.ofMillis(50))
            .withTransport(tls)
            .withExposeInternalErrors(true)
            .withMaxRunaway(3)
            .withGeneration(4)
            .withLeaveRoutingOnDrain(true);

    assertThat(o)
        .isEqualTo(
            new WorkOptions(
                "rt:1",
                ID,
                Duration.ofSeconds(7),
                WorkOptions.RUNTIME_MAX_MESSAGE_BYTES,
                1000,
                Optional.of(Duration.ofMinutes(6)),
                Duration.ofMillis(5),
                Duration.ofMillis(50),
                tls,
                true,
                3,
                4,
                true));
    // every component differs from its default above: a copy that dropped one would show here
    assertThat(o.withGeneration(4)).isEqualTo(o);
    assertThat(o.withGeneration(5).generation()).isEqualTo(5);
  }

  @Test
  void a_with_validates_like_the_constructor() {
    assertThatThrownBy(() -> WorkOptions.defaults("rt:1", ID).withGeneration(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("plugin generation must be at least 1");
  }
}
