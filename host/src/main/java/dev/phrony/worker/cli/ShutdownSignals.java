package dev.phrony.worker.cli;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;

/**
 * SIGINT/SIGTERM for long-running commands: the first signal starts a graceful stop, a second one
 * exits at once. A JVM shutdown hook cannot do this: it runs only after the JVM has decided to
 * exit, and a second signal cannot interrupt it.
 */
final class ShutdownSignals {
  private static final Logger log = LoggerFactory.getLogger(ShutdownSignals.class);

  private ShutdownSignals() {}

  /** A graceful stop: blocks until done. */
  interface Stop {
    void run() throws InterruptedException;
  }

  /**
   * Installs the handlers: the first signal runs {@code onFirst} on a thread of its own.
   *
   * @return opens once {@code onFirst} has returned (or failed): the command's wait
   */
  static CountDownLatch install(Stop onFirst) {
    CountDownLatch stopped = new CountDownLatch(1);
    Runnable stop =
        () -> {
          try {
            onFirst.run();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          } finally {
            stopped.countDown();
          }
        };
    AtomicInteger count = new AtomicInteger();
    for (String name : new String[] {"INT", "TERM"}) {
      Signal.handle(
          new Signal(name),
          signal -> {
            if (count.incrementAndGet() == 1) {
              log.info("SIG{} received: stopping gracefully (send it again to exit at once)", name);
              Thread.ofPlatform().name("phrony-shutdown").start(stop);
            } else {
              log.warn("second signal: exiting at once");
              Runtime.getRuntime().halt(130);
            }
          });
    }
    return stopped;
  }
}
