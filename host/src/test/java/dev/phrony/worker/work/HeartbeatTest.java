package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.testkit.FakeScheduler;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Rule 1 on a fake scheduler: the test moves time, nothing sleeps. */
class HeartbeatTest {
  private final FakeScheduler timers = new FakeScheduler();
  private final AtomicInteger sent = new AtomicInteger();
  private final AtomicInteger expired = new AtomicInteger();
  private final Heartbeat hb =
      new Heartbeat(timers, sent::incrementAndGet, expired::incrementAndGet);

  @Test
  void sends_every_half_ttl_and_expires_after_a_whole_ttl_without_ack() {
    hb.start();
    hb.onRegistered(10_000);
    timers.advance(Duration.ofMillis(4_999));
    assertThat(sent).hasValue(0);
    timers.advance(Duration.ofMillis(1));
    assertThat(sent).hasValue(1);
    timers.advance(Duration.ofMillis(4_999));
    assertThat(expired).hasValue(0);
    timers.advance(Duration.ofMillis(1));
    assertThat(expired).hasValue(1);
    assertThat(timers.pending()).as("both timers stop with the stream").isZero();
  }

  @Test
  void the_lease_is_fresh_until_a_whole_ttl_passes_without_a_sign_of_life() {
    hb.start();
    hb.onRegistered(10_000);
    timers.advance(Duration.ofMillis(9_999));
    assertThat(hb.fresh()).isTrue();
    hb.onAck();
    timers.advance(Duration.ofMillis(9_999));
    assertThat(hb.fresh()).isTrue();
    assertThat(expired).hasValue(0);
    timers.advance(Duration.ofMillis(1));
    assertThat(hb.fresh()).isFalse();
    assertThat(expired).hasValue(1);
  }

  @Test
  void an_ack_keeps_the_stream_alive() {
    hb.start();
    hb.onRegistered(10_000);
    for (int i = 1; i <= 10; i++) {
      timers.advance(i == 1 ? Duration.ofSeconds(5) : Duration.ofMillis(4_970)); // to the beat
      assertThat(sent).hasValue(i);
      timers.advance(Duration.ofMillis(30));
      hb.onAck();
      assertThat(hb.lastRoundTrip()).isEqualTo(Duration.ofMillis(30));
    }
    assertThat(expired).hasValue(0);
    assertThat(timers.pending()).as("one heartbeat and one watchdog timer").isEqualTo(2);
  }

  @Test
  void zero_ttl_means_thirty_seconds_and_interval_is_never_under_one_second() {
    assertThat(Heartbeat.ttlOf(0)).isEqualTo(Duration.ofSeconds(30));
    assertThat(Heartbeat.intervalOf(Heartbeat.ttlOf(0))).isEqualTo(Duration.ofSeconds(15));
    assertThat(Heartbeat.intervalOf(Duration.ofMillis(600))).isEqualTo(Duration.ofSeconds(1));
  }

  @Test
  void no_registered_within_the_default_ttl_is_a_dead_stream() {
    hb.start();
    timers.advance(Duration.ofSeconds(29));
    assertThat(expired).hasValue(0);
    assertThat(sent).as("no heartbeat before registered").hasValue(0);
    timers.advance(Duration.ofSeconds(1));
    assertThat(expired).hasValue(1);
  }

  @Test
  void a_stopped_heartbeat_leaves_no_timer_and_never_fires() {
    hb.start();
    hb.onRegistered(10_000);
    hb.stop();
    assertThat(timers.pending()).isZero();
    timers.advance(Duration.ofMinutes(5));
    assertThat(sent).hasValue(0);
    assertThat(expired).hasValue(0);
  }
}
