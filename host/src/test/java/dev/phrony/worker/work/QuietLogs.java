package dev.phrony.worker.work;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a body with the root logger at WARN: the tests' default DEBUG logs every HTTP/2 frame on the
 * I/O thread, which slows a run against the real runtime and buries what it is about. The worker's
 * own account of its streams ({@link WorkClient}'s logger) stays at INFO.
 */
final class QuietLogs {
  private QuietLogs() {}

  interface Body {
    void run() throws Exception;
  }

  static void run(Body body) throws Exception {
    Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    Logger client = (Logger) LoggerFactory.getLogger(WorkClient.class);
    Level rootLevel = root.getLevel();
    Level clientLevel = client.getLevel();
    root.setLevel(Level.WARN);
    client.setLevel(Level.INFO);
    try {
      body.run();
    } finally {
      root.setLevel(rootLevel);
      client.setLevel(clientLevel);
    }
  }
}
