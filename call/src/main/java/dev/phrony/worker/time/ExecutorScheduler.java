package dev.phrony.worker.time;

import java.time.Duration;
import java.time.InstantSource;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The real {@link Scheduler}: one daemon platform thread on the system clock. A cancelled task
 * leaves the queue at once (so a call that ends long before its deadline frees its timer), and a
 * task that throws is logged rather than silently swallowed by its future.
 */
public final class ExecutorScheduler implements Scheduler, AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ExecutorScheduler.class);

  private final ScheduledThreadPoolExecutor executor;

  public ExecutorScheduler(String threadName) {
    executor =
        new ScheduledThreadPoolExecutor(1, Thread.ofPlatform().name(threadName).daemon().factory());
    executor.setRemoveOnCancelPolicy(true);
    executor.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
  }

  @Override
  public Handle schedule(Runnable task, Duration delay) {
    ScheduledFuture<?> f;
    try {
      f =
          executor.schedule(
              () -> {
                try {
                  task.run();
                } catch (RuntimeException | Error e) {
                  log.error("scheduled task failed", e);
                }
              },
              Math.max(0, delay.toNanos()),
              TimeUnit.NANOSECONDS);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      return NONE; // closed: the worker is stopping, nothing is due any more
    }
    return () -> f.cancel(false);
  }

  @Override
  public InstantSource clock() {
    return InstantSource.system();
  }

  /** Tasks waiting to run (cancelled ones are gone at once). */
  public int queued() {
    return executor.getQueue().size();
  }

  @Override
  public void close() {
    executor.shutdownNow();
  }
}
