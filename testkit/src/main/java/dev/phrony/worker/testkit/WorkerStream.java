package dev.phrony.worker.testkit;

import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.worker.time.Scheduler;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The single writer of one Work stream: it owns the server call's outbound side.
 *
 * <p>Anyone may {@link #send} (it only enqueues) and then {@link #flush}; one thread at a time
 * drains the queue into the call while the transport {@linkplain ServerCallStreamObserver#isReady
 * is ready}, and the call's onReady handler resumes it. The same drain hands inbound credit back
 * ({@code request(n)} in batches) but stops doing so while the outbound backlog is large, so a
 * worker that stops reading eventually stops being read, as with the real runtime's blocking sends.
 */
final class WorkerStream {

  private static final Logger log = LoggerFactory.getLogger(WorkerStream.class);

  /** Inbound messages requested when the stream opens. */
  static final int INITIAL_REQUEST = 128;

  /** Consumed messages handed back to the transport at once. */
  private static final int REQUEST_BATCH = 64;

  /** Outbound backlog above which no more inbound messages are requested. */
  private static final int HIGH_WATER = 1024;

  /** What grpc-go's {@code Send} returns on a stream whose handler already returned. */
  static final String DEAD_STREAM_ERROR = "rpc error: code = Canceled desc = context canceled";

  private record Close(Status status) {}

  private final long streamId;
  private final ServerCallStreamObserver<WorkServerMsg> call;
  private final EventLog events;
  private final Queue<Object> queue = new ConcurrentLinkedQueue<>();
  private final AtomicInteger backlog = new AtomicInteger();
  private final AtomicInteger wip = new AtomicInteger();
  private final AtomicInteger unrequested = new AtomicInteger();
  private final AtomicBoolean open = new AtomicBoolean(true);
  private final AtomicReference<Status> aborted = new AtomicReference<>();
  private volatile boolean finished;
  private volatile String workerId;

  WorkerStream(long streamId, ServerCallStreamObserver<WorkServerMsg> call, EventLog events) {
    this.streamId = streamId;
    this.call = call;
    this.events = events;
  }

  long streamId() {
    return streamId;
  }

  String workerId() {
    return workerId;
  }

  /** The worker id events on this stream are attributed to (set at {@code register}). */
  void workerId(String id) {
    this.workerId = id;
  }

  /** True until the stream is closed by the runtime or lost by the transport. */
  boolean isOpen() {
    return open.get();
  }

  /** Enqueues {@code msg}; false when the stream is closed. Call {@link #flush()} afterwards. */
  boolean send(WorkServerMsg msg) {
    if (!open.get()) {
      return false;
    }
    queue.add(msg);
    backlog.incrementAndGet();
    return true;
  }

  /** A message held back until {@code dueNanos}, and everything queued behind it with it. */
  private record Later(WorkServerMsg msg, long dueNanos, InstantSource clock) {}

  /**
   * Enqueues {@code msg} to be written {@code delay} from now; what is sent after it waits behind
   * it, so the stream's order stays as sent. False when the stream is closed.
   */
  boolean sendAfter(WorkServerMsg msg, Duration delay, Scheduler timers) {
    if (!open.get()) {
      return false;
    }
    queue.add(new Later(msg, Timeouts.now(timers.clock()) + delay.toNanos(), timers.clock()));
    backlog.incrementAndGet();
    timers.schedule(this::flush, delay);
    return true;
  }

  /** Ends the stream with {@code status} once everything queued before it is written. */
  void close(Status status) {
    if (open.compareAndSet(true, false)) {
      // A message still held back is never written: the stream ends now, as a Go handler's
      // return ends it while another goroutine's Send is still on its way.
      for (Object o : queue) {
        if (o instanceof Later && queue.remove(o)) {
          backlog.decrementAndGet();
        }
      }
      queue.add(new Close(status));
      flush();
    }
  }

  /**
   * The transport is gone (client cancelled, connection lost, forced shutdown): drop what is
   * queued.
   */
  void abort(Status status) {
    open.set(false);
    aborted.compareAndSet(null, status);
    flush();
  }

  /** One inbound message was processed; its credit goes back to the transport on the next drain. */
  void consumed() {
    unrequested.incrementAndGet();
  }

  /** Writes what the transport accepts now; safe to call from any thread, at any time. */
  void flush() {
    if (wip.getAndIncrement() != 0) {
      return; // the thread already draining will loop once more
    }
    int missed = 1;
    do {
      drain();
      missed = wip.addAndGet(-missed);
    } while (missed != 0);
  }

  private void drain() {
    if (finished) {
      queue.clear();
      return;
    }
    Status lost = aborted.get();
    if (lost != null) {
      finish(lost, false);
      return;
    }
    for (Object head; (head = queue.peek()) != null; ) {
      if (head instanceof Close close) {
        finish(close.status(), true);
        return;
      }
      if (!call.isReady()
          || head instanceof Later later && later.dueNanos() - Timeouts.now(later.clock()) > 0) {
        break; // a held-back message is written by the flush its timer runs
      }
      queue.poll();
      backlog.decrementAndGet();
      WorkServerMsg msg = head instanceof Later later ? later.msg() : (WorkServerMsg) head;
      try {
        call.onNext(msg);
      } catch (RuntimeException e) { // cancelled under our feet
        aborted.compareAndSet(null, Status.fromThrowable(e));
        open.set(false);
        finish(aborted.get(), false);
        return;
      }
      events.record(streamId, workerId, Event.Direction.OUT, msg);
      if (log.isDebugEnabled()) {
        log.debug("stream={} worker_id={} OUT {}", streamId, workerId, Wire.describe(msg));
      }
    }
    int credit = unrequested.get();
    if (credit >= REQUEST_BATCH && backlog.get() < HIGH_WATER) {
      unrequested.addAndGet(-credit);
      call.request(credit);
    }
  }

  private void finish(Status status, boolean sendStatus) {
    finished = true;
    open.set(false);
    queue.clear();
    backlog.set(0);
    if (sendStatus) {
      try {
        if (status.isOk()) {
          call.onCompleted();
        } else {
          call.onError(status.asRuntimeException());
        }
      } catch (RuntimeException e) {
        log.debug("stream={} could not send final status {}", streamId, status, e);
      }
    }
    events.record(streamId, workerId, Event.Direction.END, status);
  }
}
