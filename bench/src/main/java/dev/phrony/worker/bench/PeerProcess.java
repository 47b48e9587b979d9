package dev.phrony.worker.bench;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;

/** A {@link PeerWorker} stand-in as a child JVM on this JVM's classpath, output to a file. */
final class PeerProcess implements AutoCloseable {
  private final Process process;
  final String shape;
  final String workerId;

  /** The version of {@code echo} it serves: its shape. */
  final String version;

  private PeerProcess(Process process, String shape, String workerId) {
    this.process = process;
    this.shape = shape;
    this.workerId = workerId;
    this.version = shape;
  }

  /** Starts a stand-in of {@code shape} ({@code inline} or {@code threads}) on {@code target}. */
  static PeerProcess start(String shape, String target, Path log) throws IOException {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    String id = "peer-" + shape;
    Process p =
        new ProcessBuilder(
                java.toString(),
                "--enable-native-access=ALL-UNNAMED",
                "-cp",
                System.getProperty("java.class.path"),
                PeerWorker.class.getName(),
                shape,
                target,
                id,
                shape)
            .redirectErrorStream(true)
            .redirectOutput(log.toFile())
            .start();
    return new PeerProcess(p, shape, id);
  }

  long pid() {
    return process.pid();
  }

  boolean alive() {
    return process.isAlive();
  }

  @Override
  public void close() throws InterruptedException {
    Proc.stop(process, Duration.ofSeconds(10));
  }
}
