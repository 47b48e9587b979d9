package dev.phrony.worker.testkit;

import java.time.Duration;
import java.time.InstantSource;
import java.util.Objects;

/** The validated configuration of a {@link LocalRuntime}; built by {@link LocalRuntime.Builder}. */
record RuntimeSettings(
    int port,
    Duration leaseTtl,
    Duration queueWait,
    Duration executionTimeout,
    int maxQueuePerKey,
    InstantSource clock,
    Duration shutdownGrace,
    int eventLogCapacity,
    int maxInboundMessageSize,
    String version,
    String schemaVersion,
    ServerSecurity security,
    Duration cancelDelay) {

  RuntimeSettings {
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException("port out of range: " + port);
    }
    requirePositive(leaseTtl, "leaseTtl");
    requirePositive(queueWait, "queueWait");
    requirePositive(executionTimeout, "executionTimeout");
    Objects.requireNonNull(shutdownGrace, "shutdownGrace");
    if (shutdownGrace.isNegative()) {
      throw new IllegalArgumentException("shutdownGrace must not be negative: " + shutdownGrace);
    }
    if (maxQueuePerKey < 1) {
      throw new IllegalArgumentException("maxQueuePerKey must be at least 1: " + maxQueuePerKey);
    }
    if (eventLogCapacity < 1) {
      throw new IllegalArgumentException(
          "eventLogCapacity must be at least 1: " + eventLogCapacity);
    }
    if (maxInboundMessageSize < 1) {
      throw new IllegalArgumentException(
          "maxInboundMessageSize must be positive: " + maxInboundMessageSize);
    }
    Objects.requireNonNull(clock, "clock");
    Objects.requireNonNull(version, "version");
    Objects.requireNonNull(schemaVersion, "schemaVersion");
    Objects.requireNonNull(security, "security");
    Objects.requireNonNull(cancelDelay, "cancelDelay");
    if (cancelDelay.isNegative()) {
      throw new IllegalArgumentException("cancelDelay must not be negative: " + cancelDelay);
    }
  }

  private static void requirePositive(Duration d, String name) {
    Objects.requireNonNull(d, name);
    if (d.isZero() || d.isNegative()) {
      throw new IllegalArgumentException(name + " must be positive: " + d);
    }
  }
}
