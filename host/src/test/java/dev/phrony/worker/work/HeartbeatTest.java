package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Rule 1 with a clock the test moves: no sleeping. */
class HeartbeatTest {
  private final AtomicReference<Instant> now = new AtomicReference<>(Instant.parse("2026-01-01T00:00:00Z"));
  private final InstantSource clock = () -> now.get();

  private void advance(Duration d) {
    now.set(now.get().plus(d));
  }

  @Test
  void sends_every_half_ttl_and_expires_after_a_whole_ttl_without_ack() {
    Heartbeat hb = new Heartbeat(clock);
    hb.onRegistered(10_000);
    advance(Duration.ofMillis(4_999));
    assertThat(hb.tick()).isEqualTo(Heartbeat.Action.NONE);
    advance(Duration.ofMillis(1));
    assertThat(hb.tick()).isEqualTo(Heartbeat.Action.SEND);
    assertThat(hb.tick()).isEqualTo(Heartbeat.Action.NONE);
    advance(Duration.ofMillis(5_000));
    assertThat(hb.tick()).isEqualTo(Heartbeat.Action.EXPIRED);
  }

  @Test
  void the_lease_is_fresh_until_a_whole_ttl_passes_without_a_sign_of_life() {
    Heartbeat hb = new Heartbeat(clock);
    hb.onRegistered(10_000);
    advance(Duration.ofMillis(9_999));
    assertThat(hb.fresh()).isTrue();
    hb.onAck();
    advance(Duration.ofMillis(9_999));
    assertThat(hb.fresh()).isTrue();
    advance(Duration.ofMillis(1));
    assertThat(hb.fresh()).isFalse();
  }

  @Test
  void an_ack_keeps_the_stream_alive() {
    Heartbeat hb = new Heartbeat(clock);
    hb.onRegistered(10_000);
    for (int i = 0; i < 10; i++) {
      advance(Duration.ofSeconds(5));
      assertThat(hb.tick()).isEqualTo(Heartbeat.Action.SEND);
      advance(Duration.ofMillis(30));
      hb.onAck();
      assertThat(hb.lastRoundTrip()).isEqualTo(Duration.ofMillis(30));
    }
  }

  @Test
  void zero_ttl_means_thirty_seconds_and_interval_is_never_under_one_second() {
    assertThat(Heartbeat.ttlOf(0)).isEqualTo(Duration.ofSeconds(30));
    assertThat(Heartbeat.intervalOf(Heartbeat.ttlOf(0))).isEqualTo(Duration.ofSeconds(15));
    assertThat(Heartbeat.intervalOf(Duration.ofMillis(600))).isEqualTo(Duration.ofSeconds(1));
  }

  @Test
  void no_registered_within_the_default_ttl_is_a_dead_stream() {
    Heartbeat hb = new Heartbeat(clock);
    advance(Duration.ofSeconds(29));
    assertThat(hb.tick()).isEqualTo(Heartbeat.Action.NONE);
    advance(Duration.ofSeconds(1));
    assertThat(hb.tick()).isEqualTo(Heartbeat.Action.EXPIRED);
  }
}
