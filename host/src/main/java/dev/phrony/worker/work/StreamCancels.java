package dev.phrony.worker.work;

import java.util.concurrent.ConcurrentHashMap;

/**
 * The cancels a stream has read whose transition the call's owner has not made yet: filled the
 * moment a cancel's bytes are read, before the message waits anywhere, and asked by the {@link
 * StreamWriter} right before it hands a result or nack to gRPC. So a result is never written after
 * the worker has read a cancel for its call, however long the owner takes to get to that cancel.
 *
 * <p>A count per call id, not a set: {@code cancel X, invoke X, cancel X} read in one burst must
 * keep X blocked until the owner has taken in the second cancel too. An id leaves once the owner
 * has made every transition it was read for; from then on the call is cancelled in the owner's
 * state, which never sends for it again (a later invoke of the same id is a new attempt).
 */
final class StreamCancels {
  private final ConcurrentHashMap<String, Integer> pending = new ConcurrentHashMap<>();

  /** When the last {@value #REMEMBERED} cancels were read and answers written. */
  private final Recent cancelsRead = new Recent();

  private final Recent answersWritten = new Recent();
  static final int REMEMBERED = 1024;

  /**
   * The last {@value #REMEMBERED} (call id, nanoTime) pairs, overwritten in a ring: two array
   * writes per answer on the hot path, no lock and no allocation. Written and read on the I/O
   * thread (gRPC delivers there, the writer drains there, and a stream's end runs there); a scan
   * finds an id only when the runtime names a call it did not know, and serves a log line.
   */
  private static final class Recent {
    private final String[] ids = new String[REMEMBERED];
    private final long[] nanos = new long[REMEMBERED];
    private int next;

    void put(String callId, long at) {
      ids[next] = callId;
      nanos[next] = at;
      next = (next + 1) % REMEMBERED;
    }

    /** The newest time noted for {@code callId}, or null. */
    Long get(String callId) {
      for (int i = 1; i <= REMEMBERED; i++) {
        int k = Math.floorMod(next - i, REMEMBERED);
        if (callId.equals(ids[k])) {
          return nanos[k];
        }
      }
      return null;
    }
  }

  /**
   * Of a call the runtime said it did not know: when its answer was handed to gRPC and when its
   * cancel was read, in {@code System.nanoTime}, each null if not among the recent ones.
   */
  record Crossing(String callId, Long writtenNanos, Long cancelReadNanos) {
    /** True if the answer was written before the cancel was read: they crossed on the wire. */
    boolean crossed() {
      return writtenNanos != null && (cancelReadNanos == null || writtenNanos < cancelReadNanos);
    }
  }

  /** A cancel for {@code callId} was read (the I/O thread, as it is delivered). */
  void read(String callId) {
    pending.merge(callId, 1, Integer::sum);
    cancelsRead.put(callId, System.nanoTime());
  }

  /** An answer for {@code callId} was handed to gRPC (the writer). */
  void written(String callId) {
    answersWritten.put(callId, System.nanoTime());
  }

  Crossing crossing(String callId) {
    return new Crossing(callId, answersWritten.get(callId), cancelsRead.get(callId));
  }

  /** The owner made the transition of one cancel read for {@code callId}. */
  void taken(String callId) {
    pending.computeIfPresent(callId, (k, n) -> n == 1 ? null : n - 1);
  }

  /**
   * True if the writer must not write a result or nack for {@code callId}: a cancel for it was read
   * and the owner has not taken it in yet.
   */
  boolean blocks(String callId) {
    return !pending.isEmpty() && pending.containsKey(callId);
  }
}
