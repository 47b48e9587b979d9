package dev.phrony.worker.work;

import dev.phrony.worker.transport.TlsFailure;
import io.grpc.Status;
import java.net.ConnectException;
import java.net.UnknownHostException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * When the next serving stream opens after one ended, and what the operator is told:
 *
 * <ul>
 *   <li>at once after a stream that was registered (a crossing kill, a runtime restart, a dropped
 *       connection): the runtime accepted us a moment ago, and every moment unregistered is one in
 *       which calls cannot reach this worker;
 *   <li>with full-jitter {@link Backoff} when the runtime refused a registration or ended fresh
 *       streams before they registered;
 *   <li>at most {@link #UNREACHABLE_MAX_DELAY} apart while it cannot be reached at all (a try costs
 *       it nothing, and one that is back must be served within a second, not after a window grown
 *       over its whole outage).
 * </ul>
 *
 * A runtime that cannot be reached is said once at WARN, with why ("connection refused", "host not
 * found") and what to check, then at most every {@link #REMIND_EVERY} while it stays so, and once
 * more when it answers again. In the dispatcher's context, like the {@link Registrations} it
 * serves.
 */
final class Reconnects {
  private static final Logger log = LoggerFactory.getLogger(WorkClient.class);

  /** The longest wait between tries while the runtime cannot be reached at all. */
  static final Duration UNREACHABLE_MAX_DELAY = Duration.ofMillis(500);

  /** While it stays unreachable, a reminder this often. */
  static final Duration REMIND_EVERY = Duration.ofMinutes(1);

  private final Backoff backoff;
  private final String target;
  private final InstantSource clock;
  private String lastTlsProblem;

  /** Since when the runtime cannot be reached, why, and how often it was tried; null: it can. */
  private Outage outage;

  private static final class Outage {
    final Instant since;
    final String why;
    int tries;
    Instant reminded;

    Outage(Instant since, String why) {
      this.since = since;
      this.why = why;
      this.reminded = since;
    }
  }

  Reconnects(Backoff backoff, String target, InstantSource clock) {
    this.backoff = backoff;
    this.target = target;
    this.clock = clock;
  }

  /** The wait before the next stream after {@code end}; says what the operator must know. */
  Duration after(WorkSession.End end) {
    if (end.registered() || end.healthy()) {
      backoff.reset(); // it reached the runtime: a new failure starts from the first window
    }
    tls(end.status());
    Optional<String> unreachable = end.registered() ? Optional.empty() : unreachable(end.status());
    if (unreachable.isPresent()) {
      Duration delay = backoff.next();
      delay = delay.compareTo(UNREACHABLE_MAX_DELAY) > 0 ? UNREACHABLE_MAX_DELAY : delay;
      down(unreachable.get(), end.status(), delay);
      return delay;
    }
    Duration delay = end.registered() ? Duration.ZERO : backoff.next();
    log.info("reconnect in {} ms because {}", delay.toMillis(), end.reason());
    return delay;
  }

  /** True while the runtime cannot be reached (it was said once; the tries go on quietly). */
  boolean down() {
    return outage != null;
  }

  /** A serving stream registered: an outage that was reported is over. */
  void registered() {
    Outage o = outage;
    outage = null;
    if (o != null) {
      log.info(
          "the runtime at {} answers again after {} s ({} tries)",
          target,
          Duration.between(o.since, clock.instant()).toSeconds(),
          o.tries);
    }
  }

  private void down(String why, Status status, Duration delay) {
    Instant now = clock.instant();
    if (outage == null || !outage.why.equals(why)) {
      outage = new Outage(now, why);
      outage.tries = 1;
      log.warn(
          "cannot reach the runtime at {}: {} ({}); trying again every {} ms until it answers (is"
              + " it running? the address is --runtime or PHRONY_RUNTIME_ADDR)",
          target,
          why,
          status.getCode() + (status.getDescription() == null ? "" : " " + status.getDescription()),
          UNREACHABLE_MAX_DELAY.toMillis());
      return;
    }
    outage.tries++;
    if (Duration.between(outage.reminded, now).compareTo(REMIND_EVERY) >= 0) {
      outage.reminded = now;
      log.info(
          "the runtime at {} is still unreachable ({}) after {} s and {} tries",
          target,
          why,
          Duration.between(outage.since, now).toSeconds(),
          outage.tries);
    } else {
      log.debug("runtime unreachable ({}); next try in {} ms", why, delay.toMillis());
    }
  }

  /** Once per distinct problem: retried forever, its cause would otherwise never show. */
  private void tls(Status status) {
    Optional<TlsFailure> tls = TlsFailure.of(status.getCause());
    if (tls.isPresent() && !tls.get().problem().equals(lastTlsProblem)) {
      lastTlsProblem = tls.get().problem();
      log.warn("TLS to {} failed: {} (cause: {})", target, tls.get().problem(), tls.get().chain());
    }
  }

  /**
   * Why a stream that never registered could not reach the runtime ("connection refused", "host not
   * found", ...), or empty when it reached something that answered.
   */
  static Optional<String> unreachable(Status status) {
    for (Throwable t = status.getCause(); t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof UnknownHostException) {
        return Optional.of("host not found");
      }
      if (t instanceof ConnectException) {
        String m = t.getMessage() == null ? "" : t.getMessage().toLowerCase(java.util.Locale.ROOT);
        return Optional.of(m.contains("refused") ? "connection refused" : "cannot connect");
      }
    }
    String d = status.getDescription() == null ? "" : status.getDescription();
    if (d.contains("Unable to resolve host")) {
      return Optional.of("host not found");
    }
    if (status.getCode() == Status.Code.UNAVAILABLE && TlsFailure.of(status.getCause()).isEmpty()) {
      return Optional.of("unavailable");
    }
    return Optional.empty();
  }
}
