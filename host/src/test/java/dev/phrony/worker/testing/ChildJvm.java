package dev.phrony.worker.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** Starts a test main class in a child JVM on the test classpath; stdout and stderr merged. */
public final class ChildJvm {
  private ChildJvm() {}

  public static Process start(Class<?> main, String... args) throws IOException {
    List<String> cmd = new ArrayList<>(List.of(
        System.getProperty("java.home") + "/bin/java",
        "-cp", System.getProperty("java.class.path"),
        "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto",
        "-Dslf4j.provider=org.slf4j.helpers.NOP_FallbackServiceProvider",
        "-Dslf4j.internal.verbosity=WARN",
        main.getName()));
    cmd.addAll(List.of(args));
    return new ProcessBuilder(cmd).redirectErrorStream(true).start();
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

  public record Result(int exitCode, String output) {}
}
