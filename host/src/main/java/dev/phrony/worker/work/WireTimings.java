package dev.phrony.worker.work;

import java.util.Arrays;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Where a cancel and a result spend their time between the socket and the call's owner: the window
 * in which a result can still be written for a call the runtime has already cancelled (it then ends
 * the stream {@code NOT_FOUND}). Kept as samples in memory (the last {@value #KEPT} of each
 * interval), read by tests and benchmarks; nothing is logged.
 */
public final class WireTimings {
  /** The intervals measured. */
  public enum Interval {
    /** A cancel's bytes read from the socket, to the dispatcher's {@code onCancel}. */
    CANCEL_READ_TO_ON_CANCEL,
    /** {@code onCancel}, to the call owner's transition for that cancel. */
    ON_CANCEL_TO_OWNER,
    /** The owner's decision to send a result, to the flush that writes its bytes to the socket. */
    RESULT_DECIDED_TO_SOCKET
  }

  /** One interval's distribution, in milliseconds. */
  public record Summary(Interval interval, long count, double p50Ms, double p99Ms, double maxMs) {
    @Override
    public String toString() {
      return String.format(
          java.util.Locale.ROOT,
          "%s: n=%d p50=%.3f ms p99=%.3f ms max=%.3f ms",
          interval.name().toLowerCase(java.util.Locale.ROOT),
          count,
          p50Ms,
          p99Ms,
          maxMs);
    }
  }

  static final int KEPT = 1 << 16;

  private final Map<Interval, Samples> samples = new EnumMap<>(Interval.class);

  /** When the socket's last read began (the I/O thread only). */
  private long lastReadNanos;

  /** Queue times of results handed to gRPC since the last flush (the I/O thread only). */
  private long[] unflushed = new long[64];

  private int unflushedCount;

  // Atomic: a stream's end counts them wherever it is taken in; tests and benchmarks read them.
  private final AtomicLong crossedOnWire = new AtomicLong();
  private final AtomicLong writtenAfterCancelRead = new AtomicLong();

  /** A stream was ended for an answer to a call the runtime no longer knew. */
  void unknownCall(boolean crossedOnWire) {
    (crossedOnWire ? this.crossedOnWire : writtenAfterCancelRead).incrementAndGet();
  }

  /** Streams ended for an answer written before its cancel was read: a crossing on the wire. */
  public long crossedOnWire() {
    return crossedOnWire.get();
  }

  /** Streams ended for an answer written after its cancel was read (the worker's fault). */
  public long writtenAfterCancelRead() {
    return writtenAfterCancelRead.get();
  }

  public WireTimings() {
    for (Interval i : Interval.values()) {
      samples.put(i, new Samples());
    }
  }

  void record(Interval interval, long nanos) {
    samples.get(interval).add(nanos);
  }

  /** The transport read bytes from the socket now (the I/O thread). */
  void socketRead() {
    lastReadNanos = System.nanoTime();
  }

  /** When the socket's last read began: what a message delivered in that read arrived with. */
  long lastReadNanos() {
    return lastReadNanos;
  }

  /** A result queued at {@code decidedNanos} was handed to gRPC (the I/O thread). */
  void resultWritten(long decidedNanos) {
    if (unflushedCount == unflushed.length) {
      unflushed = Arrays.copyOf(unflushed, unflushed.length * 2);
    }
    unflushed[unflushedCount++] = decidedNanos;
  }

  /** The transport flushed to the socket (the I/O thread): the results written are out. */
  void socketFlushed() {
    if (unflushedCount == 0) {
      return;
    }
    long now = System.nanoTime();
    Samples s = samples.get(Interval.RESULT_DECIDED_TO_SOCKET);
    for (int i = 0; i < unflushedCount; i++) {
      s.add(now - unflushed[i]);
    }
    unflushedCount = 0;
  }

  public Summary summary(Interval interval) {
    return samples.get(interval).summary(interval);
  }

  /** Forgets every sample (between the runs of a measurement). */
  public void reset() {
    samples.values().forEach(Samples::reset);
    crossedOnWire.set(0);
    writtenAfterCancelRead.set(0);
  }

  /**
   * The last {@link #KEPT} samples of one interval; any thread may add. In the worker every add is
   * on the I/O thread, but a dispatcher without a loop (tests) records where it is posted, and a
   * benchmark resets and reads from its own thread; the uncontended increment costs 6-9 ns per
   * result here, against 4.5-4.9 us of the I/O thread's CPU per call.
   */
  private static final class Samples {
    private final long[] ring = new long[KEPT];
    private final AtomicLong added = new AtomicLong();

    void add(long nanos) {
      ring[(int) (added.getAndIncrement() & (KEPT - 1))] = nanos;
    }

    void reset() {
      added.set(0);
    }

    Summary summary(Interval interval) {
      long n = added.get();
      long[] copy = Arrays.copyOf(ring, (int) Math.min(n, KEPT));
      Arrays.sort(copy);
      if (copy.length == 0) {
        return new Summary(interval, 0, 0, 0, 0);
      }
      return new Summary(
          interval,
          n,
          ms(copy[(copy.length - 1) / 2]),
          ms(copy[(int) Math.min(copy.length - 1, Math.ceil(copy.length * 0.99) - 1)]),
          ms(copy[copy.length - 1]));
    }

    private static double ms(long nanos) {
      return nanos / 1e6;
    }
  }
}
