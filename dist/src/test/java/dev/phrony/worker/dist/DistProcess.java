package dev.phrony.worker.dist;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The assembled distribution's {@code bin/phrony-worker} run as a child process, its output
 * captured in files so a test can wait for a line, signal it, and read its exit status.
 */
final class DistProcess implements AutoCloseable {
  static final Duration DEADLINE = Duration.ofSeconds(60);

  record Result(int exit, String out, String err) {}

  private final List<String> command;
  private final Process process;
  private final Path out;
  private final Path err;

  private DistProcess(List<String> command, Process process, Path out, Path err) {
    this.command = command;
    this.process = process;
    this.out = out;
    this.err = err;
  }

  static Path distDir() {
    return Path.of(System.getProperty("phrony.dist.dir"));
  }

  /** Starts {@code bin/phrony-worker args...} in {@code workDir}, with extra environment. */
  static DistProcess start(Path workDir, Map<String, String> env, String... args)
      throws IOException {
    List<String> command = new ArrayList<>(List.of(distDir().resolve("bin/phrony-worker")
        .toString()));
    command.addAll(List.of(args));
    Path out = Files.createTempFile(workDir, "stdout", ".txt");
    Path err = Files.createTempFile(workDir, "stderr", ".txt");
    ProcessBuilder pb = new ProcessBuilder(command)
        .directory(workDir.toFile()) // so that a stray ./plugins cannot be picked up
        .redirectOutput(out.toFile())
        .redirectError(err.toFile());
    pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
    pb.environment().remove("PHRONY_WORKER_JAVA_OPTS");
    pb.environment().remove("PHRONY_RUNTIME_ADDR");
    pb.environment().putAll(env);
    return new DistProcess(command, pb.start(), out, err);
  }

  /** Runs a command to its end. */
  static Result run(Path workDir, String... args) throws IOException, InterruptedException {
    try (DistProcess p = start(workDir, Map.of(), args)) {
      return p.awaitExit(DEADLINE);
    }
  }

  long pid() {
    return process.pid();
  }

  String stdout() {
    return read(out);
  }

  String stderr() {
    return read(err);
  }

  /** Waits until stderr contains {@code text}. */
  void awaitStderr(String text, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!stderr().contains(text)) {
      if (!process.isAlive()) {
        throw new AssertionError(command + " exited " + process.exitValue() + " before printing '"
            + text + "'; stderr:\n" + stderr());
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("no '" + text + "' on stderr within " + timeout + "; stderr:\n"
            + stderr());
      }
      LockSupport.parkNanos(20_000_000);
    }
  }

  /** SIGTERM, as a container runtime sends it. */
  void terminate() {
    process.destroy();
  }

  /** SIGKILL: no drain, no cleanup. */
  void kill() throws InterruptedException {
    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
  }

  Result awaitExit(Duration timeout) throws InterruptedException {
    if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      throw new AssertionError(command + " did not finish within " + timeout + "; stderr:\n"
          + stderr());
    }
    return new Result(process.exitValue(), stdout(), stderr());
  }

  @Override
  public void close() throws InterruptedException {
    if (process.isAlive()) {
      kill();
    }
  }

  private static String read(Path p) {
    try {
      return Files.readString(p);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
