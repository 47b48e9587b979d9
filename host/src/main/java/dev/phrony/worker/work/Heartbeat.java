package dev.phrony.worker.work;

import dev.phrony.worker.time.Scheduler;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.function.BooleanSupplier;

/**
 * Heartbeats and the watchdog of one stream (protocol.md rule 1), on the injected {@link
 * Scheduler}, so tests move a fake clock instead of sleeping.
 *
 * <p>Heartbeats go every TTL/2 (never under 1 s; TTL 30 s when the runtime sends 0) from {@code
 * registered} on. If no {@code heartbeat_ack} (or, before registration, no {@code registered})
 * arrives for a whole TTL, {@code expired} runs once. The watchdog is one timer for the time the
 * last sign of life leaves; when it fires early (a sign came since) it re-arms for what is left.
 * {@link #stop} cancels both timers. Called from the stream's I/O thread and the scheduler's, so
 * the methods are synchronized.
 */
final class Heartbeat {
  static final Duration DEFAULT_TTL = Duration.ofSeconds(30);
  static final Duration MIN_INTERVAL = Duration.ofSeconds(1);

  private final Scheduler scheduler;
  private final InstantSource clock;
  private final Runnable send;
  private final Runnable expired;
  private final BooleanSupplier hold;
  private Duration ttl = DEFAULT_TTL;
  private Duration interval;
  private Instant lastSign;
  private Instant lastSent;
  private Scheduler.Handle beat = Scheduler.NONE;
  private Scheduler.Handle watchdog = Scheduler.NONE;
  private boolean stopped;

  /** True while beats are held back; the silence that follows is ours, not a dead stream's. */
  private boolean silent;

  /** When beats resumed after a hold: the watchdog counts a TTL from there too. */
  private Instant resumed = Instant.MIN;

  /**
   * @param send sends one heartbeat
   * @param expired ends the stream: no sign of life for a whole TTL
   */
  Heartbeat(Scheduler scheduler, Runnable send, Runnable expired) {
    this(scheduler, send, expired, () -> false);
  }

  /**
   * @param hold true while the worker holds itself out of routing ({@link Runaways}): no heartbeat
   *     is sent, so the runtime's lease lapses (it is passive: the stream stays), and the silence
   *     that follows is ours, not a dead stream's; beats resume, and renew the lease, when it ends
   */
  Heartbeat(Scheduler scheduler, Runnable send, Runnable expired, BooleanSupplier hold) {
    this.hold = hold;
    this.scheduler = scheduler;
    this.clock = scheduler.clock();
    this.send = send;
    this.expired = expired;
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

  /** The stream is open: the watchdog waits a default TTL for {@code registered}. */
  synchronized void start() {
    if (!stopped) {
      armWatchdog();
    }
  }

  synchronized void onRegistered(long leaseTtlMs) {
    ttl = ttlOf(leaseTtlMs);
    interval = intervalOf(ttl);
    lastSign = clock.instant();
    if (!stopped) {
      watchdog.cancel();
      armWatchdog();
      beat.cancel();
      beat = scheduler.schedule(this::beat, interval);
    }
  }

  synchronized void onAck() {
    lastSign = clock.instant();
  }

  /** Cancels both timers; nothing runs after this returns. */
  synchronized void stop() {
    stopped = true;
    beat.cancel();
    watchdog.cancel();
  }

  private void beat() {
    synchronized (this) {
      if (stopped) {
        return;
      }
      beat = scheduler.schedule(this::beat, interval);
      if (hold.getAsBoolean()) {
        silent = true;
        return;
      }
      if (silent) {
        silent = false;
        resumed = clock.instant(); // the first beat after: a whole TTL for its ack
      }
      lastSent = clock.instant();
    }
    send.run();
  }

  private void armWatchdog() {
    Instant from = resumed.isAfter(lastSign) ? resumed : lastSign;
    watchdog = scheduler.schedule(this::watch, Duration.between(clock.instant(), from.plus(ttl)));
  }

  private void watch() {
    synchronized (this) {
      if (stopped) {
        return;
      }
      if (silent || hold.getAsBoolean()) {
        watchdog = scheduler.schedule(this::watch, ttl); // silent on purpose
        return;
      }
      if (clock.instant().isBefore(resumed.plus(ttl)) || fresh()) {
        armWatchdog(); // a sign of life came since it was armed
        return;
      }
      stop();
    }
    expired.run();
  }

  /** Round trip of the last heartbeat, if it was acked. */
  synchronized Duration lastRoundTrip() {
    return lastSent == null || lastSign.isBefore(lastSent)
        ? Duration.ZERO
        : Duration.between(lastSent, lastSign);
  }

  /** True while the last sign of life (registered or heartbeat_ack) is less than a TTL old. */
  synchronized boolean fresh() {
    return clock.instant().isBefore(lastSign.plus(ttl));
  }

  /**
   * The latest the runtime's lease can run to: it renews a lease when it reads a heartbeat, before
   * its ack reaches us, so our last sign of life plus a TTL is never early.
   */
  synchronized Instant leaseLapses() {
    return lastSign.plus(ttl);
  }

  synchronized Duration ttl() {
    return ttl;
  }
}
