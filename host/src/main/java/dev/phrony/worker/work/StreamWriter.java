package dev.phrony.worker.work;

import dev.phrony.runtime.v1.WorkClientMsg;
import io.grpc.stub.ClientCallStreamObserver;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The one writer of a stream's outbound side. Any thread may {@link #send}; messages are written in
 * order, only while gRPC says the stream {@code isReady} (the rest wait for {@code onReady}), and
 * never by two threads at once ({@code StreamObserver} is not thread-safe). A drain loop with a
 * work-in-progress counter gives that without a lock on the hot path.
 *
 * <p>The drain runs on {@code drainer}: for the client, the channel's own event loop, at once when
 * the sender is already on it (an inbound message answered with a nack) and as a task otherwise.
 * Never on a handler's thread: those are virtual and short-lived, and gRPC/Netty serialise each
 * message into buffers from per-thread caches, which a thread that writes once and dies would
 * create and throw away on every call. On the one long-lived I/O thread the caches are reused, no
 * other thread has to be woken to write, and the results that finish while it writes go out in the
 * same drain.
 *
 * <p>The last check is here, next to the write: a result or nack whose call has a cancel read on
 * this stream that the owner has not taken in yet ({@link StreamCancels}) is dropped, not written.
 */
final class StreamWriter {
  private final ClientCallStreamObserver<Outbound> out;
  private final Executor drainer;
  private final ConcurrentLinkedQueue<Queued> queue = new ConcurrentLinkedQueue<>();
  private final WireTimings timings;
  private final StreamCancels cancels;
  private final AtomicInteger wip = new AtomicInteger();

  /**
   * Messages at the head of the queue that are written without waiting for gRPC's {@code onReady}:
   * a new stream's registers. gRPC buffers them behind the stream's creation and they leave in the
   * same flush, where waiting for {@code onReady} costs another turn of the I/O thread
   * (milliseconds when it is busy, and a kill's dead entry fails every call routed to it
   * meanwhile).
   */
  private final AtomicInteger unpaced = new AtomicInteger();

  private final Runnable drainLoop = this::drainLoop;
  private volatile boolean closed;

  /** Queue marker for a half-close (identity compared; never written). */
  private static final Outbound HALF_CLOSE = new Outbound.Proto(WorkClientMsg.getDefaultInstance());

  /** A message and when it was queued (for {@link WireTimings}). */
  private record Queued(Outbound msg, long queuedNanos) {}

  StreamWriter(
      ClientCallStreamObserver<Outbound> out,
      Executor drainer,
      WireTimings timings,
      StreamCancels cancels) {
    this.out = out;
    this.drainer = drainer;
    this.timings = timings;
    this.cancels = cancels;
  }

  /** Queues {@code msg}; returns false when the stream is already closed. */
  boolean send(Outbound msg) {
    if (closed) {
      return false;
    }
    queue.add(new Queued(msg, System.nanoTime()));
    drain();
    return true;
  }

  /** Queues {@code msg}, to be written even before the stream is ready (see {@link #unpaced}). */
  boolean sendUnpaced(Outbound msg) {
    unpaced.incrementAndGet();
    return send(msg);
  }

  /**
   * Removes a queued, not yet written result or nack for {@code callId} (after a cancel the runtime
   * has forgotten the call, and a result for it would end the stream). Returns true if one was
   * removed.
   */
  boolean unsend(String callId) {
    return queue.removeIf(q -> callId.equals(Outbound.resultOrNackCallId(q.msg())));
  }

  /** Called by gRPC's onReady handler and after each send: makes sure a drain will run. */
  void drain() {
    if (wip.getAndIncrement() != 0) {
      return; // the drain running (or scheduled) will loop once more
    }
    try {
      drainer.execute(drainLoop);
    } catch (RejectedExecutionException e) {
      drainLoop(); // the client is shutting down: write what is left here
    }
  }

  private void drainLoop() {
    int missed = 1;
    do {
      while (!closed && (unpaced.get() > 0 || out.isReady())) {
        Queued q = queue.poll();
        if (q == null) {
          break;
        }
        if (unpaced.get() > 0) {
          unpaced.decrementAndGet();
        }
        Outbound m = q.msg();
        if (m == HALF_CLOSE) {
          closed = true;
          out.onCompleted();
          break;
        }
        String answers = Outbound.resultOrNackCallId(m);
        if (answers != null && cancels.blocks(answers)) {
          continue; // the last check, next to the write: its cancel has been read
        }
        out.onNext(m);
        if (answers != null) {
          cancels.written(answers);
        }
        if (m instanceof Outbound.Result || m instanceof Outbound.Proto p && p.msg().hasResult()) {
          timings.resultWritten(q.queuedNanos());
        }
      }
      missed = wip.addAndGet(-missed);
    } while (missed != 0);
  }

  /** Half-closes the stream cleanly once everything queued before has been written. */
  void complete() {
    send(HALF_CLOSE);
  }

  /** Marks the writer closed (the stream ended); later sends are refused. */
  void closed() {
    closed = true;
    queue.clear();
  }
}
