package dev.phrony.worker.testing;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/** Starts a test main class in a child JVM on the test classpath; stdout and stderr merged. */
public final class ChildJvm {
  private ChildJvm() {}

  public static Process start(Class<?> main, String... args) throws IOException {
    return new ProcessBuilder(command(System.getProperty("java.class.path"), main.getName(), args))
        .redirectErrorStream(true)
        .start();
  }

  private static List<String> command(String classpath, String main, String... args) {
    List<String> cmd =
        new ArrayList<>(
            List.of(
                System.getProperty("java.home") + "/bin/java",
                "-cp",
                classpath,
                "-XX:TieredStopAtLevel=1",
                "-XX:+UseSerialGC",
                "-Xshare:auto",
                "-Dslf4j.provider=org.slf4j.helpers.NOP_FallbackServiceProvider",
                "-Dslf4j.internal.verbosity=WARN",
                main));
    cmd.addAll(List.of(args));
    return cmd;
  }

  public static BufferedReader lines(Process p) {
    return new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
  }

  /** Runs to completion; returns exit code and output. */
  public static Result run(Class<?> main, String... args) throws IOException, InterruptedException {
    Process p = start(main, args);
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    return new Result(p.waitFor(), out);
  }

  /**
   * Runs {@code main} on {@code classpath} (not the test's) to completion; returns exit code and
   * output. A child still running at {@code deadline} is killed, and the test fails with what it
   * wrote.
   */
  public static Result run(List<Path> classpath, String main, Duration deadline, String... args)
      throws IOException, InterruptedException {
    Path out = Files.createTempFile("child-jvm-", ".out");
    try {
      Process p =
          new ProcessBuilder(
                  command(
                      classpath.stream()
                          .map(Path::toString)
                          .collect(Collectors.joining(File.pathSeparator)),
                      main,
                      args))
              .redirectErrorStream(true)
              .redirectOutput(out.toFile())
              .start();
      if (!p.waitFor(deadline.toMillis(), TimeUnit.MILLISECONDS)) {
        p.destroyForcibly().waitFor();
        throw new AssertionError(
            main + " did not end within " + deadline + ":\n" + Files.readString(out));
      }
      return new Result(p.exitValue(), Files.readString(out));
    } finally {
      Files.deleteIfExists(out);
    }
  }

  public record Result(int exitCode, String output) {}
}
