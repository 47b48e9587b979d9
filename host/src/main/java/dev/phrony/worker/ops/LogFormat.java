package dev.phrony.worker.ops;

/** How log lines look on stderr. */
public enum LogFormat {
  /** One line per event, {@code key=value} (logfmt), values with spaces quoted. */
  text,
  /** One JSON object per line, the logging context (MDC) as top-level fields. */
  json
}
