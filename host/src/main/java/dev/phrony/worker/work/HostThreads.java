package dev.phrony.worker.work;

import dev.phrony.worker.plugin.ThreadLocalSweep;
import io.netty.channel.EventLoop;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The host's threads that run plugin code and outlive a plugin generation: the handler pool's and
 * each Work stream's I/O thread (where {@code handleAsync} starts inline). An unload releases them
 * from the old plugin's class loader.
 */
public final class HostThreads {
  /** How long an unload waits for a busy I/O thread to run its sweep. */
  private static final long IO_WAIT_MS = 1_000;

  private static final Set<EventLoop> IO = ConcurrentHashMap.newKeySet();

  private HostThreads() {}

  static void ioThreadStarted(EventLoop loop) {
    IO.add(loop);
  }

  static void ioThreadEnded(EventLoop loop) {
    IO.remove(loop);
  }

  /**
   * Releases the host's threads from {@code loader}: ends the idle handler threads (whatever the
   * plugin left in their {@code ThreadLocal}s goes with them) and removes its {@code ThreadLocal}
   * values from each I/O thread, on that thread. Returns the I/O thread values removed.
   */
  public static int release(ClassLoader loader) {
    HandlerThreads.retireIdle();
    if (!ThreadLocalSweep.available()) {
      return 0;
    }
    AtomicInteger cleared = new AtomicInteger();
    for (EventLoop loop : IO) {
      CountDownLatch done = new CountDownLatch(1);
      try {
        loop.execute(
            () -> {
              try {
                cleared.addAndGet(ThreadLocalSweep.clearCurrentThread(loader));
              } finally {
                done.countDown();
              }
            });
        // A loop held by a blocked handleAsync runs the sweep when it is free; not waited for.
        done.await(IO_WAIT_MS, TimeUnit.MILLISECONDS);
      } catch (RejectedExecutionException ending) {
        // its thread is ending, and the values with it
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    return cleared.get();
  }
}
