package dev.phrony.worker.ops;

/**
 * Why a Work stream ended and the worker reconnected: the {@code reason} label of {@code
 * phrony_worker_stream_reconnects_total}. A few classes, not the free text that the log line
 * carries.
 */
public enum ReconnectReason {
  /** The runtime closed the stream cleanly. */
  RUNTIME_CLOSED("runtime_closed"),
  /** The runtime could not be reached, or the connection dropped (UNAVAILABLE). */
  UNAVAILABLE("unavailable"),
  /** No {@code heartbeat_ack} (or {@code registered}) for a whole lease TTL. */
  HEARTBEAT_TIMEOUT("heartbeat_timeout"),
  /** The connection left READY (the runtime going away); ended from our side. */
  GOING_AWAY("going_away"),
  /** The runtime ended the stream NOT_FOUND (an unknown worker or call). */
  NOT_FOUND("not_found"),
  /** The runtime or a proxy refused our credentials (UNAUTHENTICATED, PERMISSION_DENIED). */
  UNAUTHENTICATED("unauthenticated"),
  /** Any other error status. */
  ERROR("error");

  private final String label;

  ReconnectReason(String label) {
    this.label = label;
  }

  public String label() {
    return label;
  }
}
