package dev.phrony.worker.work;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;

/**
 * Heartbeat schedule and watchdog of one stream (protocol.md rule 1), as a state machine driven
 * by {@link #tick()} so tests advance a clock instead of sleeping.
 *
 * <p>Heartbeats go every TTL/2 (never under 1 s; TTL 30 s when the runtime sends 0). If no
 * {@code heartbeat_ack} (or, before registration, no {@code registered}) arrives for a whole
 * TTL, the stream is dead. Confined to the session's tick thread plus the inbound thread, so the
 * methods are synchronized.
 */
final class Heartbeat {
  static final Duration DEFAULT_TTL = Duration.ofSeconds(30);
  static final Duration MIN_INTERVAL = Duration.ofSeconds(1);

  enum Action { NONE, SEND, EXPIRED }

  private final InstantSource clock;
  private Duration ttl = DEFAULT_TTL;
  private Duration interval;
  private Instant lastSign;
  private Instant nextSend;
  private Instant lastSent;

  Heartbeat(InstantSource clock) {
    this.clock = clock;
    this.lastSign = clock.instant();
  }

  /** Lease TTL as the runtime sent it; 0 or less means the default 30 s. */
  static Duration ttlOf(long leaseTtlMs) {
    return leaseTtlMs <= 0 ? DEFAULT_TTL : Duration.ofMillis(leaseTtlMs);
  }

  static Duration intervalOf(Duration ttl) {
    Duration half = ttl.dividedBy(2);
    return half.compareTo(MIN_INTERVAL) < 0 ? MIN_INTERVAL : half;
  }

  synchronized void onRegistered(long leaseTtlMs) {
    ttl = ttlOf(leaseTtlMs);
    interval = intervalOf(ttl);
    lastSign = clock.instant();
    nextSend = lastSign.plus(interval);
  }

  synchronized void onAck() {
    Instant now = clock.instant();
    lastSign = now;
  }

  /** Round trip of the last heartbeat, if it was acked. */
  synchronized Duration lastRoundTrip() {
    return lastSent == null || lastSign.isBefore(lastSent) ? Duration.ZERO
        : Duration.between(lastSent, lastSign);
  }

  /** True while the last sign of life (registered or heartbeat_ack) is less than a TTL old. */
  synchronized boolean fresh() {
    return clock.instant().isBefore(lastSign.plus(ttl));
  }

  synchronized Duration ttl() {
    return ttl;
  }

  synchronized Action tick() {
    Instant now = clock.instant();
    if (!now.isBefore(lastSign.plus(ttl))) {
      return Action.EXPIRED;
    }
    if (nextSend != null && !now.isBefore(nextSend)) {
      lastSent = now;
      nextSend = now.plus(interval);
      return Action.SEND;
    }
    return Action.NONE;
  }
}
