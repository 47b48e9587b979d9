package dev.phrony.worker.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** {@code jcmd} of this JVM's JDK against a host JVM: its heap as the GC sees it. */
final class Jcmd {
  private static final Pattern HEAP_USED = Pattern.compile("heap\\s+total\\b[^\\n]*?used (\\d+)K");

  private Jcmd() {}

  /** {@code jcmd PID COMMAND}'s output; what went wrong, as text, if it could not run. */
  static String run(long pid, String command) {
    Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
    if (!Files.isExecutable(jcmd)) {
      return "(no jcmd in this JDK)";
    }
    try {
      Process p =
          new ProcessBuilder(jcmd.toString(), Long.toString(pid), command)
              .redirectErrorStream(true)
              .start();
      String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      p.waitFor(30, TimeUnit.SECONDS);
      return text.strip();
    } catch (IOException | InterruptedException e) {
      return "(jcmd failed: " + e + ")";
    }
  }

  /** A full GC in {@code pid} ({@code GC.run}), then its heap used, MiB; NaN if unknown. */
  static double liveHeapMib(long pid) {
    run(pid, "GC.run");
    Matcher m = HEAP_USED.matcher(run(pid, "GC.heap_info"));
    return m.find() ? Long.parseLong(m.group(1)) / 1024.0 : Double.NaN;
  }
}
