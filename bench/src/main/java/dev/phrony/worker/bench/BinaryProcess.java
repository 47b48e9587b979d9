package dev.phrony.worker.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * A native binary given on the command line (a runtime, a peer worker) as a child process, stdout
 * and stderr in one file. Its {@link #pid()} is the binary itself (no launcher in between).
 */
final class BinaryProcess implements AutoCloseable {
  private final Process process;
  private final Path log;
  final String name;

  private BinaryProcess(Process process, Path log, String name) {
    this.process = process;
    this.log = log;
    this.name = name;
  }

  static BinaryProcess start(String name, List<String> command, Path log) throws IOException {
    Files.createDirectories(log.toAbsolutePath().getParent());
    Process p =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    return new BinaryProcess(p, log, name);
  }

  long pid() {
    return process.pid();
  }

  boolean alive() {
    return process.isAlive();
  }

  /** The last {@code n} lines of its output, for an error message. */
  String tail(int n) {
    try {
      List<String> lines = Files.readAllLines(log);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - n), lines.size()));
    } catch (IOException | RuntimeException e) {
      return "(" + log + " unreadable: " + e + ")";
    }
  }

  Path log() {
    return log;
  }

  /** SIGTERM, then SIGKILL after 10 s. */
  @Override
  public void close() throws InterruptedException {
    Proc.stop(process, Duration.ofSeconds(10));
  }
}
