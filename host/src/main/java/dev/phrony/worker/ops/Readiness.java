package dev.phrony.worker.ops;

import java.util.Objects;

/**
 * Whether the worker should get work now ({@code /readyz}): registered with a fresh lease and not
 * draining. Otherwise, why not, in one line.
 */
public record Readiness(boolean ready, String reason) {
  public static final Readiness READY = new Readiness(true, "ready");

  public Readiness {
    Objects.requireNonNull(reason, "reason");
  }

  public static Readiness notReady(String reason) {
    return new Readiness(false, reason);
  }
}
