package dev.phrony.worker.ops;

/**
 * Why the runtime ended a registered stream with an error status and kept its registration (a dead
 * entry): the {@code cause} label of {@code phrony_worker_stream_kills_total}.
 */
public enum StreamKill {
  /**
   * A result for a call the runtime had already forgotten: written before its cancel was read, so
   * they crossed on the wire (the runtime forgets a call before it sends the cancel). Unavoidable.
   */
  CROSSED("crossed"),
  /** An answer written after the worker had read its cancel: a bug of the worker. */
  AFTER_READ("after_read"),
  /** Any other error status the runtime ended a registered stream with. */
  OTHER("other");

  private final String label;

  StreamKill(String label) {
    this.label = label;
  }

  public String label() {
    return label;
  }
}
