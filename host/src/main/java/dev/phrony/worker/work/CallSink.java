package dev.phrony.worker.work;

import dev.phrony.worker.outbox.HeldResult;

/**
 * Where a call's answer goes: the stream that delivered its invoke (protocol.md rule 3). The {@link
 * Dispatcher} talks to a session only through this, so it is testable without gRPC.
 */
interface CallSink {

  /**
   * The handlers this stream's registration advertised: its invokes are served by them, in its
   * slots. Null: the dispatcher's first set (a sink made by a test).
   */
  default HandlerSet handlers() {
    return null;
  }

  /** True while the stream is open; a closed sink never sends. */
  boolean live();

  /**
   * False for a stream not opened yet (a rescue that waits for its calls to be taken off a dead
   * entry first): nothing may be sent on it until then.
   */
  default boolean open() {
    return true;
  }

  /** Queues a result on this stream; false if the stream is already closed. */
  boolean sendResult(HeldResult result);

  /** Queues a nack on this stream (a no-op once closed). */
  void sendNack(String callId, String code, String message);

  /** Withdraws a queued, unwritten result or nack for {@code callId}; true if one was. */
  boolean unsend(String callId);

  /**
   * The owner has made its transition for a cancel of {@code callId} read on this stream (the
   * stream blocked answers for it from the moment it read the cancel, see {@link StreamCancels}).
   */
  default void cancelTaken(String callId) {}
}
