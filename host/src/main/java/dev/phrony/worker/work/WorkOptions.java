package dev.phrony.worker.work;

import dev.phrony.worker.transport.Transport;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * How the worker talks to the runtime. Immutable; validated when built.
 *
 * @param target runtime address {@code host:port}
 * @param identity what the worker registers as
 * @param drainTimeout how long a shutdown waits for running calls and their acks
 * @param maxInboundBytes largest {@code invoke} accepted (well above the runtime's 4 MiB, which it
 *     does not apply to what it sends)
 * @param maxResultBytes largest payload sent; larger ones become {@code result_too_large}
 * @param keepAlive HTTP/2 keepalive ping interval, off when empty (liveness is the heartbeat's job;
 *     grpc-go servers answer pings more often than every 5 minutes with GOAWAY)
 * @param backoffInitial first reconnect delay bound
 * @param backoffMax reconnect delay cap
 * @param transport plaintext or TLS, and the bearer token
 * @param exposeInternalErrors tell the model the class and message of a handler's unexpected
 *     exception (development); off, it gets a reference to the log line only
 * @param maxRunaway handlers still running after their call was cancelled or timed out (they
 *     ignored the interrupt) above which the worker reports not-ready
 * @param generation the plugin generation to register first (1, or the one the state dir kept):
 *     generation n registers as {@link WorkerIdentity#forGeneration}
 * @param leaveRoutingOnDrain a drain first stops heartbeating and serves what still comes until the
 *     lease lapses (no call refused); off, it refuses new calls at once ({@code nack draining})
 */
public record WorkOptions(
    String target,
    WorkerIdentity identity,
    Duration drainTimeout,
    int maxInboundBytes,
    int maxResultBytes,
    Optional<Duration> keepAlive,
    Duration backoffInitial,
    Duration backoffMax,
    Transport transport,
    boolean exposeInternalErrors,
    int maxRunaway,
    int generation,
    boolean leaveRoutingOnDrain) {

  /** gRPC's default receive limit, which the runtime applies to what workers send. */
  public static final int RUNTIME_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

  /** Room for the envelope (call id, error text) around a payload. */
  public static final int RESULT_HEADROOM_BYTES = 16 * 1024;

  public static final int DEFAULT_MAX_RESULT_BYTES =
      RUNTIME_MAX_MESSAGE_BYTES - RESULT_HEADROOM_BYTES;
  public static final int DEFAULT_MAX_INBOUND_BYTES = 64 * 1024 * 1024;
  public static final Duration DEFAULT_DRAIN_TIMEOUT = Duration.ofSeconds(30);
  public static final Duration MIN_SAFE_KEEPALIVE = Duration.ofMinutes(5);
  public static final int DEFAULT_MAX_RUNAWAY = 16;

  public WorkOptions {
    Objects.requireNonNull(target, "target");
    Objects.requireNonNull(identity, "identity");
    Objects.requireNonNull(transport, "transport");
    if (drainTimeout.isNegative()) {
      throw new IllegalArgumentException("drain timeout must not be negative");
    }
    if (maxResultBytes <= 0 || maxResultBytes > DEFAULT_MAX_RESULT_BYTES) {
      throw new IllegalArgumentException(
          "max result size must be between 1 and "
              + DEFAULT_MAX_RESULT_BYTES
              + " bytes (the runtime accepts messages up to 4 MiB)");
    }
    if (generation < 1) {
      throw new IllegalArgumentException("plugin generation must be at least 1");
    }
    if (maxRunaway < 0) {
      throw new IllegalArgumentException("max runaway handlers must not be negative");
    }
    if (maxInboundBytes < RUNTIME_MAX_MESSAGE_BYTES) {
      throw new IllegalArgumentException("max inbound size must be at least 4 MiB");
    }
  }

  /** Options with defaults for everything but the address and identity. */
  public static WorkOptions defaults(String target, WorkerIdentity identity) {
    Settings s = new Settings();
    s.target = target;
    s.identity = identity;
    return s.build();
  }

  public WorkOptions withDrainTimeout(Duration d) {
    return copy(s -> s.drainTimeout = d);
  }

  public WorkOptions withMaxResultBytes(int bytes) {
    return copy(s -> s.maxResultBytes = bytes);
  }

  public WorkOptions withMaxInboundBytes(int bytes) {
    return copy(s -> s.maxInboundBytes = bytes);
  }

  public WorkOptions withKeepAlive(Optional<Duration> interval) {
    return copy(s -> s.keepAlive = interval);
  }

  public WorkOptions withBackoff(Duration initial, Duration max) {
    return copy(
        s -> {
          s.backoffInitial = initial;
          s.backoffMax = max;
        });
  }

  public WorkOptions withTransport(Transport t) {
    return copy(s -> s.transport = t);
  }

  public WorkOptions withExposeInternalErrors(boolean expose) {
    return copy(s -> s.exposeInternalErrors = expose);
  }

  public WorkOptions withMaxRunaway(int max) {
    return copy(s -> s.maxRunaway = max);
  }

  public WorkOptions withGeneration(int g) {
    return copy(s -> s.generation = g);
  }

  public WorkOptions withLeaveRoutingOnDrain(boolean leave) {
    return copy(s -> s.leaveRoutingOnDrain = leave);
  }

  private WorkOptions copy(Consumer<Settings> change) {
    Settings s = new Settings(this);
    change.accept(s);
    return s.build();
  }

  /**
   * The components as plain fields, so a {@code withX} names only what it changes. The one place
   * besides the record header that lists them all: a new setting is a field here (with its
   * default), a line in the copy and one in {@link #build}, and its {@code withX}.
   */
  private static final class Settings {
    String target;
    WorkerIdentity identity;
    Duration drainTimeout = DEFAULT_DRAIN_TIMEOUT;
    int maxInboundBytes = DEFAULT_MAX_INBOUND_BYTES;
    int maxResultBytes = DEFAULT_MAX_RESULT_BYTES;
    Optional<Duration> keepAlive = Optional.empty();
    Duration backoffInitial = Duration.ofMillis(250);
    Duration backoffMax = Duration.ofSeconds(30);
    Transport transport = Transport.plaintext();
    boolean exposeInternalErrors;
    int maxRunaway = DEFAULT_MAX_RUNAWAY;
    int generation = 1;
    boolean leaveRoutingOnDrain;

    Settings() {}

    Settings(WorkOptions o) {
      target = o.target;
      identity = o.identity;
      drainTimeout = o.drainTimeout;
      maxInboundBytes = o.maxInboundBytes;
      maxResultBytes = o.maxResultBytes;
      keepAlive = o.keepAlive;
      backoffInitial = o.backoffInitial;
      backoffMax = o.backoffMax;
      transport = o.transport;
      exposeInternalErrors = o.exposeInternalErrors;
      maxRunaway = o.maxRunaway;
      generation = o.generation;
      leaveRoutingOnDrain = o.leaveRoutingOnDrain;
    }

    WorkOptions build() {
      return new WorkOptions(
          target,
          identity,
          drainTimeout,
          maxInboundBytes,
          maxResultBytes,
          keepAlive,
          backoffInitial,
          backoffMax,
          transport,
          exposeInternalErrors,
          maxRunaway,
          generation,
          leaveRoutingOnDrain);
    }
  }
}
