package dev.phrony.worker.work;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Runs what a stream receives (each message, then its end) in order on the I/O thread, a few per
 * task, so that the transport's flush runs between slices.
 *
 * <p>Why: gRPC delivers every message of one socket read before it flushes what was written
 * meanwhile (its flush is a task queued behind the read). Handled inline, the results of a read's
 * 64 invokes left in one write after the last was handled; the runtime sat idle until then and the
 * calls moved in convoys. Sliced, the first results are on the wire while later invokes are still
 * handled, and the runtime's threads work on them on the other core. Measured at concurrency 64
 * ({@code bin/bench --probe host --concurrency 64}): 84-86k calls/s inline, 93-96k with slices of 8
 * (more writes: ~1 us more CPU per call on this thread), 87-96k with 16, 62-77k with 4.
 *
 * <p>Slices grow: the first of a burst is {@value #FIRST_SLICE} messages, each next one twice the
 * last, up to {@value #MAX_SLICE}, and the size starts over once the queue is empty. The first
 * results leave as early as with fixed slices of 8, but a read of 128 messages (64 invokes, 64
 * acks) is flushed 5 times instead of 16. Measured by the same probe: ~3 tasks per burst instead of
 * ~7.7, and 15-20% less CPU per call on this thread in probes run side by side (4.5-4.9 us against
 * 5.6-6.2); calls/s equal within the probe's noise.
 *
 * <p>{@link #add} may be called from any thread (gRPC calls an observer from the I/O thread, but a
 * stream started before its transport was ready is first delivered by the thread that connected
 * it); the tasks run one at a time, in the order added, on {@code loop}.
 */
final class InboundSlices {
  /** Messages handled by the first task of a burst; each next task handles twice as many. */
  static final int FIRST_SLICE = 8;

  /** The most messages one task handles. */
  static final int MAX_SLICE = 64;

  private final ConcurrentLinkedQueue<Runnable> pending = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean scheduled = new AtomicBoolean();
  private final Executor loop;
  private final Runnable slice = this::slice;

  /** Messages the next task handles; only the tasks touch it, one at a time. */
  private int sliceSize = FIRST_SLICE;

  /**
   * @param loop queues a task behind those already queued on the I/O thread (the event loop itself,
   *     never an executor that runs inline)
   */
  InboundSlices(Executor loop) {
    this.loop = loop;
  }

  /** Queues {@code task}; a later task on the loop runs it, after those queued before it. */
  void add(Runnable task) {
    pending.add(task);
    if (!scheduled.get() && scheduled.compareAndSet(false, true)) {
      schedule();
    }
  }

  private void slice() {
    try {
      for (int i = 0, n = sliceSize; i < n; i++) {
        Runnable task = pending.poll();
        if (task == null) {
          break;
        }
        task.run(); // may add (a request for more delivers buffered messages here)
      }
    } finally {
      if (!pending.isEmpty()) {
        sliceSize = Math.min(MAX_SLICE, sliceSize * 2);
        schedule();
      } else {
        sliceSize = FIRST_SLICE; // the burst is over
        scheduled.set(false);
        // An add between the poll that found nothing and the line above saw scheduled still set.
        if (!pending.isEmpty() && scheduled.compareAndSet(false, true)) {
          schedule();
        }
      }
    }
  }

  private void schedule() {
    try {
      loop.execute(slice);
    } catch (RejectedExecutionException e) {
      // The client is shutting down and its loop takes no more tasks: run what is left here.
      Runnable task;
      while ((task = pending.poll()) != null) {
        task.run();
      }
      scheduled.set(false);
    }
  }
}
