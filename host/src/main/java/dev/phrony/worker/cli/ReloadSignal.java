package dev.phrony.worker.cli;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;

/** SIGHUP reloads the plugins folder, as daemons that reread their configuration on it do. */
final class ReloadSignal {
  private static final Logger log = LoggerFactory.getLogger(ReloadSignal.class);

  private ReloadSignal() {}

  /** Installs the handler; {@code reload} must return at once (it queues the reload). */
  static void install(Runnable reload) {
    try {
      Signal.handle(
          new Signal("HUP"),
          signal -> {
            log.info("SIGHUP received: reloading the plugins folder");
            reload.run();
          });
    } catch (IllegalArgumentException e) {
      log.info(
          "SIGHUP cannot be handled here ({}): reload with POST /plugins/reload", e.getMessage());
    }
  }
}
