package dev.phrony.worker.config;

import java.util.Objects;

/**
 * Where a setting's value came from.
 *
 * @param kind flag, env, file or default
 * @param origin what exactly: {@code --drain-timeout}, {@code PHRONY_WORKER_DRAIN_TIMEOUT}, {@code
 *     /opt/phrony-worker/conf/worker.yaml:12}, or the key for a default
 */
public record Source(Kind kind, String origin) {

  /** Precedence, strongest first: a flag beats the environment beats the file beats the default. */
  public enum Kind {
    FLAG,
    ENV,
    FILE,
    DEFAULT;

    /** Lower-case name, as printed. */
    public String label() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  public Source {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(origin, "origin");
  }

  public static Source flag(String name) {
    return new Source(Kind.FLAG, name);
  }

  public static Source env(String name) {
    return new Source(Kind.ENV, name);
  }

  public static Source file(String fileAndLine) {
    return new Source(Kind.FILE, fileAndLine);
  }

  public static Source byDefault(String key) {
    return new Source(Kind.DEFAULT, key);
  }

  @Override
  public String toString() {
    return kind == Kind.DEFAULT ? "default" : kind.label() + " " + origin;
  }
}
