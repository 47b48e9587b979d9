package dev.phrony.worker.dist;

import dev.phrony.worker.testkit.Await;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The assembled distribution's {@code bin/phrony-worker} run as a child process, its output
 * captured in files so a test can wait for a line, signal it, and read its exit status.
 */
final class DistProcess implements AutoCloseable {
  static final Duration DEADLINE = Duration.ofSeconds(60);
  private static final Pattern HTTP_ENDPOINT =
      Pattern.compile("http endpoint on http://127\\.0\\.0\\.1:(\\d+)/");
  private static final HttpClient HTTP =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

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
    return start(distDir(), workDir, env, args);
  }

  /** The same, from the distribution (a copy of it) at {@code dist}. */
  static DistProcess start(Path dist, Path workDir, Map<String, String> env, String... args)
      throws IOException {
    List<String> command = new ArrayList<>();
    if (sigintIgnoredHere()) {
      // A child inherits an ignored SIGINT, and a JVM cannot handle a signal ignored at its
      // start: tests of Ctrl-C would fail for the harness's sake (a build started in the
      // background of a non-interactive shell). GNU env restores the default.
      command.addAll(List.of("env", "--default-signal=INT"));
    }
    command.add(dist.resolve("bin/phrony-worker").toString());
    command.addAll(List.of(args));
    Path out = Files.createTempFile(workDir, "stdout", ".txt");
    Path err = Files.createTempFile(workDir, "stderr", ".txt");
    ProcessBuilder pb =
        new ProcessBuilder(command)
            .directory(workDir.toFile()) // so that a stray ./plugins cannot be picked up
            .redirectOutput(out.toFile())
            .redirectError(err.toFile());
    pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
    pb.environment().remove("PHRONY_WORKER_JAVA_OPTS");
    pb.environment().remove("PHRONY_RUNTIME_ADDR");
    // run's warm-up (some seconds of CPU before it registers) is for load, not for these tests;
    // a test of it sets its own
    pb.environment().put("PHRONY_WORKER_WARM_UP", "off");
    pb.environment().putAll(env);
    return new DistProcess(command, pb.start(), out, err);
  }

  /**
   * Copies the distribution {@code from} to {@code to} as a user unpacks it: files with their times
   * (a class archive holds only with the jars it was made from), without the launcher's archives
   * ({@code var/cds}, a cache).
   */
  static void copyTree(Path from, Path to) throws IOException {
    List<Path> all;
    try (Stream<Path> s = Files.walk(from)) {
      all = s.toList();
    }
    Path archives = from.resolve("var/cds");
    for (Path p : all) {
      Path target = to.resolve(from.relativize(p).toString());
      if (p.startsWith(archives)) {
        continue;
      } else if (Files.isDirectory(p)) {
        Files.createDirectories(target);
      } else {
        Files.copy(
            p, target, StandardCopyOption.COPY_ATTRIBUTES, StandardCopyOption.REPLACE_EXISTING);
      }
    }
  }

  /** Runs a command to its end. */
  static Result run(Path workDir, String... args) throws IOException, InterruptedException {
    return run(workDir, Map.of(), args);
  }

  /** Runs a command to its end, with extra environment. */
  static Result run(Path workDir, Map<String, String> env, String... args)
      throws IOException, InterruptedException {
    try (DistProcess p = start(workDir, env, args)) {
      return p.awaitExit(DEADLINE);
    }
  }

  /** A loopback port nothing listens on right now. */
  static int freePort() throws IOException {
    InetAddress loopback = InetAddress.getByAddress(new byte[] {127, 0, 0, 1});
    try (ServerSocket probe = new ServerSocket(0, 1, loopback)) {
      return probe.getLocalPort();
    }
  }

  /** Whether this JVM was started with SIGINT ignored (Linux; false where unknown). */
  private static boolean sigintIgnoredHere() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
        if (line.startsWith("SigIgn:")) {
          return (Long.parseUnsignedLong(line.substring(7).strip(), 16) & (1L << 1)) != 0;
        }
      }
    } catch (IOException | RuntimeException e) {
      // not Linux: nothing to correct
    }
    return false;
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
    await(err, "stderr", text, timeout);
  }

  /** Waits until stdout contains {@code text}. */
  void awaitStdout(String text, Duration timeout) {
    await(out, "stdout", text, timeout);
  }

  private void await(Path file, String name, String text, Duration timeout) {
    until("'" + text + "' on " + name, () -> read(file).contains(text), timeout);
  }

  /**
   * {@link Await#until} for a condition on what this process does: it fails at once if the process
   * exits first, and a failure shows its stdout and stderr.
   */
  void until(String what, BooleanSupplier condition, Duration timeout) {
    try {
      Await.until(
          what,
          () -> {
            if (condition.getAsBoolean()) {
              return true;
            }
            if (!process.isAlive()) {
              throw new AssertionError(
                  command
                      + " exited "
                      + process.exitValue()
                      + " before: "
                      + what
                      + "; stdout:\n"
                      + stdout()
                      + "\nstderr:\n"
                      + stderr());
            }
            return false;
          },
          timeout);
    } catch (AssertionError e) {
      if (!process.isAlive()) {
        throw e;
      }
      throw new AssertionError(
          e.getMessage() + "; stdout:\n" + stdout() + "\nstderr:\n" + stderr(), e);
    }
  }

  /** The port of the worker's HTTP endpoint (started with {@code --http 127.0.0.1:0}). */
  int httpPort() {
    awaitStderr("http endpoint on", DEADLINE);
    Matcher m = HTTP_ENDPOINT.matcher(stderr());
    if (!m.find()) {
      throw new AssertionError("no http endpoint address on stderr:\n" + stderr());
    }
    return Integer.parseInt(m.group(1));
  }

  /** {@code GET http://127.0.0.1:port/path}. */
  static HttpResponse<String> get(int port, String path) throws IOException, InterruptedException {
    return HTTP.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofSeconds(10))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** The status of {@code GET path}, or -1 when nothing answers. */
  static int status(int port, String path) {
    try {
      return get(port, path).statusCode();
    } catch (IOException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }

  /** SIGTERM, as a container runtime sends it. */
  void terminate() {
    process.destroy();
  }

  /**
   * SIGINT, as Ctrl-C in a terminal sends it ({@link Process#destroy} sends SIGTERM). The launcher
   * execs the JVM, so the pid is the JVM's.
   */
  void interrupt() throws IOException, InterruptedException {
    Process kill =
        new ProcessBuilder("kill", "-INT", String.valueOf(process.pid()))
            .redirectErrorStream(true)
            .start();
    if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
      throw new AssertionError(
          "kill -INT "
              + process.pid()
              + " failed: "
              + new String(kill.getInputStream().readAllBytes()));
    }
  }

  /** SIGKILL: no drain, no cleanup. */
  void kill() throws InterruptedException {
    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
  }

  Result awaitExit(Duration timeout) throws InterruptedException {
    if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      throw new AssertionError(
          command + " did not finish within " + timeout + "; stderr:\n" + stderr());
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
