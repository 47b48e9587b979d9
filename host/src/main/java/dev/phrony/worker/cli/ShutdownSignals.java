package dev.phrony.worker.cli;

import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;

/**
 * SIGINT/SIGTERM for long-running commands: the first signal starts a graceful stop, a second
 * one exits at once. A JVM shutdown hook cannot do this: it runs only after the JVM has decided
 * to exit, and a second signal cannot interrupt it.
 */
final class ShutdownSignals {
  private static final Logger log = LoggerFactory.getLogger(ShutdownSignals.class);

  private ShutdownSignals() {}

  /** Installs the handlers; {@code onFirst} runs on its own thread. */
  static void install(Runnable onFirst) {
    AtomicInteger count = new AtomicInteger();
    for (String name : new String[] {"INT", "TERM"}) {
      Signal.handle(new Signal(name), signal -> {
        if (count.incrementAndGet() == 1) {
          log.info("SIG{} received: stopping gracefully (send it again to exit at once)", name);
          Thread.ofPlatform().name("phrony-shutdown").start(onFirst);
        } else {
          log.warn("second signal: exiting at once");
          Runtime.getRuntime().halt(130);
        }
      });
    }
  }
}
