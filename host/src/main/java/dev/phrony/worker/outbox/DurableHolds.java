package dev.phrony.worker.outbox;

import dev.phrony.worker.time.Scheduler;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The durable holds of a {@link DurableOutbox} on their way to the log: each written (group
 * committed with the others in flight) before its future completes, and while the disk refuses
 * them, kept waiting and retried with backoff, never completed un-persisted. {@link #problem} says
 * why meanwhile (the worker is then not ready).
 */
final class DurableHolds {
  /** The outbox's own: what an operator's log configuration names. */
  private static final Logger log = LoggerFactory.getLogger(DurableOutbox.class);

  private static final Duration FIRST_RETRY = Duration.ofMillis(100);
  private static final Duration MAX_RETRY = Duration.ofSeconds(5);

  /** A durable hold whose record is not on disk yet. */
  private record Waiting(HeldResult result, CompletableFuture<Void> done) {}

  private final Path dir;
  private final LogWriter journal;
  private final Scheduler timers;
  private final AtomicLong failures;
  private final Consumer<HeldResult> onDisk;

  /** Holds whose write failed, waiting for a retry; guards the timer state below too. */
  private final List<Waiting> waiting = new ArrayList<>();

  private volatile String diskProblem;
  private Scheduler.Handle retryTimer = Scheduler.NONE;
  private boolean retryScheduled;
  private Duration retryDelay = FIRST_RETRY;
  private boolean closed;

  /**
   * @param failures counts each write that failed (with the outbox's failed intents)
   * @param onDisk told of each result once its record is on disk, before its hold completes
   */
  DurableHolds(
      Path dir,
      LogWriter journal,
      Scheduler timers,
      AtomicLong failures,
      Consumer<HeldResult> onDisk) {
    this.dir = dir;
    this.journal = journal;
    this.timers = timers;
    this.failures = failures;
    this.onDisk = onDisk;
  }

  /** Writes {@code result}; completes once it is on disk. */
  CompletableFuture<Void> write(HeldResult result) {
    Waiting w = new Waiting(result, new CompletableFuture<>());
    write(List.of(w));
    return w.done();
  }

  /** Writes the records of {@code batch}; on failure they wait for the next retry. */
  private void write(List<Waiting> batch) {
    CompletableFuture<Void> written;
    try {
      written =
          journal.appendAsync(
              batch.stream().<LogRecord>map(w -> new LogRecord.Result(w.result(), null)).toList());
    } catch (IllegalStateException closed) {
      batch.forEach(w -> w.done().completeExceptionally(closed));
      return;
    }
    written.whenComplete(
        (v, e) -> {
          if (e == null) {
            diskRecovered(); // before the holds complete: whoever waits on one sees it ready
            for (Waiting w : batch) {
              onDisk.accept(w.result());
              w.done().complete(null);
            }
          } else {
            diskFailed(
                batch, e instanceof CompletionException && e.getCause() != null ? e.getCause() : e);
          }
        });
  }

  private void diskFailed(List<Waiting> batch, Throwable cause) {
    failures.addAndGet(batch.size());
    String reason = DiskErrors.reason(cause);
    synchronized (waiting) {
      waiting.addAll(batch);
      boolean first = diskProblem == null;
      diskProblem = reason;
      if (first) {
        log.error(
            "the outbox cannot write to {} ({}): {} durable result(s) are held and not"
                + " sent until it can; retrying",
            dir,
            cause.toString(),
            waiting.size());
      }
      if (retryScheduled || closed) {
        return;
      }
      retryScheduled = true;
      retryTimer = timers.schedule(this::retry, retryDelay);
      retryDelay = retryDelay.multipliedBy(2);
      if (retryDelay.compareTo(MAX_RETRY) > 0) {
        retryDelay = MAX_RETRY;
      }
    }
  }

  private void retry() {
    List<Waiting> batch;
    synchronized (waiting) {
      retryScheduled = false;
      batch = List.copyOf(waiting);
      waiting.clear();
    }
    if (!batch.isEmpty()) {
      write(batch);
    }
  }

  private void diskRecovered() {
    synchronized (waiting) {
      if (diskProblem == null) {
        return;
      }
      diskProblem = null;
      retryDelay = FIRST_RETRY;
    }
    log.info("the outbox writes to {} again: held results are sent", dir);
  }

  /** Why the last write failed ({@code No space left on device}); empty once one succeeded. */
  Optional<String> problem() {
    String p = diskProblem;
    return p == null ? Optional.empty() : Optional.of(p);
  }

  /** Holds waiting for the disk. */
  int waiting() {
    synchronized (waiting) {
      return waiting.size();
    }
  }

  /** No more retries; every hold still waiting fails: its result was never sent. */
  void close() {
    List<Waiting> left;
    synchronized (waiting) {
      closed = true;
      left = List.copyOf(waiting);
      waiting.clear();
      retryTimer.cancel();
    }
    IOException notDurable =
        new IOException(
            "the outbox closed before the result could be" + " written: it was never sent");
    left.forEach(w -> w.done().completeExceptionally(notDurable));
  }
}
