package dev.phrony.worker.work;

import dev.phrony.worker.outbox.HeldResult;

/**
 * Where a call's answer goes: the stream that delivered its invoke (protocol.md rule 3). The
 * {@link Dispatcher} talks to a session only through this, so it is testable without gRPC.
 */
interface CallSink {

  /** True while the stream is open; a closed sink never sends. */
  boolean live();

  /** Sends a result on this stream (a no-op once closed). */
  void sendResult(HeldResult result);

  /** Sends a nack on this stream. */
  void sendNack(String callId, String code, String message);

  /** Withdraws a queued, unwritten result or nack for {@code callId}. */
  void unsend(String callId);

  /**
   * True once a whole lease TTL has passed since {@code registered} on this stream: results
   * from earlier streams that the runtime has not acked by then are orphaned.
   */
  boolean orphanWindowClosed();
}
