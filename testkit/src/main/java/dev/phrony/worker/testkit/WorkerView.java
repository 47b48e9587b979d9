package dev.phrony.worker.testkit;

import java.time.Instant;
import java.util.List;

/**
 * A snapshot of one registration in the runtime's registry.
 *
 * <p>A registration outlives its stream when the runtime ended the stream with an error status: it
 * is then {@linkplain #stale() stale} (not {@code connected}) but still routable until its lease
 * expires, and calls routed to it fail at once.
 *
 * @param workerId the registered id
 * @param streamId the stream it registered on (see {@link Event#streamId()})
 * @param workloadIdentity as sent in {@code register}
 * @param imageDigest as sent in {@code register}
 * @param handlers advertised handlers in advertisement order, with their current slot use
 * @param registeredAt by the runtime's clock
 * @param leaseExpiresAt register or last heartbeat plus the lease TTL
 * @param leaseExpired the lease had expired when the snapshot was taken: skipped by routing
 * @param connected its stream is still open
 * @param inFlight calls currently leased to this worker id
 */
public record WorkerView(
    String workerId,
    long streamId,
    String workloadIdentity,
    String imageDigest,
    List<HandlerView> handlers,
    Instant registeredAt,
    Instant leaseExpiresAt,
    boolean leaseExpired,
    boolean connected,
    int inFlight) {

  public WorkerView {
    handlers = List.copyOf(handlers);
  }

  /** The stream is gone but the registration is still in the registry. */
  public boolean stale() {
    return !connected;
  }

  /** Busy slots for {@code key} ({@code tool@version}), 0 when not advertised. */
  public int busy(String key) {
    return handlers.stream().filter(h -> h.key().equals(key)).mapToInt(HandlerView::busy).sum();
  }

  /**
   * One advertised handler.
   *
   * @param key routing key {@code tool@version}
   * @param maxConcurrency slots (an advertised 0 counts as 1)
   * @param busy slots taken by calls in flight
   * @param invoked {@code invoke} messages sent for it on this registration so far
   */
  public record HandlerView(
      String key,
      String tool,
      String version,
      String contractVersion,
      String descriptorHash,
      int maxConcurrency,
      int busy,
      long invoked) {}

  /**
   * Invokes sent for {@code key} ({@code tool@version}) on this registration, 0 when not
   * advertised.
   */
  public long invoked(String key) {
    return handlers.stream().filter(h -> h.key().equals(key)).mapToLong(HandlerView::invoked).sum();
  }
}
