package dev.phrony.worker.bench;

import dev.phrony.worker.testkit.Await;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The assembled distribution's {@code bin/phrony-worker} as a child process, on this JVM's JDK,
 * with its output in files. The launcher {@code exec}s java, so {@link #pid()} is the host JVM.
 */
final class HostProcess implements AutoCloseable {
  private static final Pattern HTTP_LINE = Pattern.compile("http endpoint on http://[^:]+:(\\d+)/");

  private final Process process;
  private final Path stdout;
  private final Path stderr;
  private final long startedNanos;
  private final Path gcLog;

  private HostProcess(Process process, Path stdout, Path stderr, long startedNanos, Path gcLog) {
    this.process = process;
    this.gcLog = gcLog;
    this.stdout = stdout;
    this.stderr = stderr;
    this.startedNanos = startedNanos;
  }

  /**
   * Starts {@code dist/bin/phrony-worker args...}.
   *
   * @param javaOpts PHRONY_WORKER_JAVA_OPTS
   */
  static HostProcess start(
      Path dist, Path workDir, String name, List<String> javaOpts, List<String> args)
      throws IOException {
    return start(dist, workDir, name, javaOpts, args, false);
  }

  /** As {@link #start(Path, Path, String, List, List)}; {@code gcLog}: log GCs to a file. */
  static HostProcess start(
      Path dist, Path workDir, String name, List<String> javaOpts, List<String> args, boolean gcLog)
      throws IOException {
    Files.createDirectories(workDir);
    List<String> command = new ArrayList<>();
    command.add(dist.resolve("bin/phrony-worker").toString());
    command.addAll(args);
    Path out = workDir.resolve(name + ".out");
    Path err = workDir.resolve(name + ".err");
    ProcessBuilder pb =
        new ProcessBuilder(command)
            .directory(workDir.toFile())
            .redirectOutput(out.toFile())
            .redirectError(err.toFile());
    pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
    Path gc = workDir.resolve(name + "-gc.log");
    List<String> opts = new ArrayList<>(javaOpts);
    if (gcLog) {
      opts.add("-Xlog:gc:file=" + gc + ":timemillis");
    }
    pb.environment().put("PHRONY_WORKER_JAVA_OPTS", String.join(" ", opts));
    pb.environment().remove("PHRONY_RUNTIME_ADDR");
    pb.environment().remove("PHRONY_WORKER_LOG_LEVEL");
    long t0 = System.nanoTime();
    return new HostProcess(pb.start(), out, err, t0, gcLog ? gc : null);
  }

  /** The GC log ({@code -Xlog:gc} with wall-clock millisecond stamps), or null. */
  Path gcLog() {
    return gcLog;
  }

  long pid() {
    return process.pid();
  }

  long startedNanos() {
    return startedNanos;
  }

  boolean alive() {
    return process.isAlive();
  }

  String stderr() {
    try {
      return Files.readString(stderr);
    } catch (IOException e) {
      return "(unreadable: " + e + ")";
    }
  }

  String stdout() {
    try {
      return Files.readString(stdout);
    } catch (IOException e) {
      return "(unreadable: " + e + ")";
    }
  }

  /** The port of {@code --http 127.0.0.1:0}, once the host's start-up log names it. */
  int httpPort(Duration timeout) {
    int[] port = {-1};
    Await.until(
        "the http endpoint line in " + stderr,
        () -> {
          Matcher m = HTTP_LINE.matcher(stderr());
          if (m.find()) {
            port[0] = Integer.parseInt(m.group(1));
            return true;
          }
          return false;
        },
        timeout);
    return port[0];
  }

  /** Waits for the process to exit on its own; its exit code, or -1 after killing it. */
  int awaitExit(Duration timeout) throws InterruptedException {
    if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      return -1;
    }
    return process.exitValue();
  }

  /** SIGTERM (the host drains), then SIGKILL if it has not exited in 30 s. */
  @Override
  public void close() throws InterruptedException {
    Proc.stop(process, Duration.ofSeconds(30));
  }
}
