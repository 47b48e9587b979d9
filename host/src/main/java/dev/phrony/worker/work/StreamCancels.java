package dev.phrony.worker.work;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * The cancels a stream has read whose transition the call's owner has not made yet: filled the
 * moment a cancel's bytes are read, before the message waits anywhere, and asked by the
 * {@link StreamWriter} right before it hands a result or nack to gRPC. So a result is never
 * written after the worker has read a cancel for its call, however long the owner takes to get
 * to that cancel.
 *
 * <p>A count per call id, not a set: {@code cancel X, invoke X, cancel X} read in one burst must
 * keep X blocked until the owner has taken in the second cancel too. An id leaves once the owner
 * has made every transition it was read for; from then on the call is cancelled in the owner's
 * state, which never sends for it again (a later invoke of the same id is a new attempt).
 */
final class StreamCancels {
  private final ConcurrentHashMap<String, Integer> pending = new ConcurrentHashMap<>();
  private final LongAdder dropped = new LongAdder();
  /** When the last {@value #REMEMBERED} cancels were read and answers written (the I/O thread). */
  private final Recent cancelsRead = new Recent();
  private final Recent answersWritten = new Recent();
  static final int REMEMBERED = 1024;

  /** Call id to nanoTime, the oldest forgotten first. */
  private static final class Recent extends java.util.LinkedHashMap<String, Long> {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
      return size() > REMEMBERED;
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
    synchronized (cancelsRead) {
      cancelsRead.put(callId, System.nanoTime());
    }
  }

  /** An answer for {@code callId} was handed to gRPC (the writer). */
  void written(String callId) {
    synchronized (answersWritten) {
      answersWritten.put(callId, System.nanoTime());
    }
  }

  Crossing crossing(String callId) {
    Long w;
    Long c;
    synchronized (answersWritten) {
      w = answersWritten.get(callId);
    }
    synchronized (cancelsRead) {
      c = cancelsRead.get(callId);
    }
    return new Crossing(callId, w, c);
  }

  /** The owner made the transition of one cancel read for {@code callId}. */
  void taken(String callId) {
    pending.computeIfPresent(callId, (k, n) -> n == 1 ? null : n - 1);
  }

  /**
   * True if the writer must not write a result or nack for {@code callId}: a cancel for it was
   * read and the owner has not taken it in yet. Counts the answers so dropped.
   */
  boolean blocks(String callId) {
    if (pending.isEmpty() || !pending.containsKey(callId)) {
      return false;
    }
    dropped.increment();
    return true;
  }

  /** Answers the writer dropped because their cancel had been read. */
  long dropped() {
    return dropped.sum();
  }
}
