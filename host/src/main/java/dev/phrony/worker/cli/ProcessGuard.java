package dev.phrony.worker.cli;

import com.sun.management.HotSpotDiagnosticMXBean;
import dev.phrony.worker.isolation.PluginClassLoader;
import dev.phrony.worker.isolation.PluginExits;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the process's fate in the host's hands, so that an exit status always means what the README
 * says:
 *
 * <ul>
 *   <li>a core thread (any platform thread that is not a plugin's) dying of an {@link Error} ends
 *       the process with {@value ExitCodes#FATAL}: a worker whose stream, ticker or HTTP thread is
 *       gone would otherwise stay up as a zombie, holding its registration;
 *   <li>{@link System#exit} called by anyone but the host (a plugin) ends it with {@value
 *       ExitCodes#PLUGIN_EXIT}, naming the caller, whatever status it asked for.
 * </ul>
 *
 * <p>Out of memory is the launcher's {@code -XX:+ExitOnOutOfMemoryError}: the JVM exits with 3
 * before any Java code could run. A shutdown started by a signal is left alone ({@link
 * ShutdownSignals} handles INT and TERM).
 */
final class ProcessGuard {
  private static final Logger log = LoggerFactory.getLogger(ProcessGuard.class);
  private static volatile boolean hostExiting;

  private ProcessGuard() {}

  /** Installs the uncaught-exception handler and the exit check, once, for the process. */
  static void install() {
    Thread.setDefaultUncaughtExceptionHandler(ProcessGuard::uncaught);
    Runtime.getRuntime()
        .addShutdownHook(
            Thread.ofPlatform().name("phrony-exit-guard").unstarted(ProcessGuard::onShutdown));
  }

  /** The host's own exit: the only {@link System#exit} the guard lets through as asked. */
  static void exit(int status) {
    hostExiting = true;
    System.exit(status);
  }

  static void uncaught(Thread t, Throwable e) {
    if (e instanceof Error && isCore(t)) {
      String what =
          "core thread '"
              + t.getName()
              + "' died of "
              + e
              + ": exiting with status "
              + ExitCodes.FATAL
              + " (held results are in the outbox; a"
              + " restart is safe)";
      try {
        log.error(what, e);
      } finally {
        System.err.println("phrony-worker: " + what);
        Runtime.getRuntime().halt(ExitCodes.FATAL);
      }
    }
    System.err.print("Exception in thread \"" + t.getName() + "\" ");
    e.printStackTrace(System.err);
  }

  /** Platform threads not started by a plugin (whose threads carry its class loader). */
  static boolean isCore(Thread t) {
    return !t.isVirtual() && !(t.getContextClassLoader() instanceof PluginClassLoader);
  }

  private static void onShutdown() {
    if (hostExiting) {
      return;
    }
    Optional<String> caller =
        exitCaller(Thread.getAllStackTraces())
            .map(PluginExits::frame)
            .or(ProcessGuard::virtualExitCaller);
    if (caller.isEmpty()) {
      return; // a signal, not a call
    }
    System.err.println(
        "phrony-worker: System.exit called by "
            + caller.get()
            + ", not by the"
            + " host: exiting with status "
            + ExitCodes.PLUGIN_EXIT
            + " (a plugin must not end the"
            + " worker; fix or remove it)");
    Runtime.getRuntime().halt(ExitCodes.PLUGIN_EXIT);
  }

  /**
   * The caller of {@code Runtime.exit} in a virtual thread (handlers run in them), which {@link
   * Thread#getAllStackTraces} leaves out: found in a full thread dump.
   */
  private static Optional<String> virtualExitCaller() {
    Path dump = null;
    try {
      dump = Files.createTempFile("phrony-exit-", ".txt");
      Files.delete(dump); // dumpThreads creates it and refuses an existing file
      ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
          .dumpThreads(dump.toString(), HotSpotDiagnosticMXBean.ThreadDumpFormat.TEXT_PLAIN);
      List<String> lines = Files.readAllLines(dump);
      for (int i = 0; i < lines.size(); i++) {
        if (lines.get(i).contains("java.lang.Runtime.exit(")) {
          int j = i + 1;
          while (j < lines.size() && lines.get(j).contains("java.lang.System.exit(")) {
            j++;
          }
          String frame = j < lines.size() ? lines.get(j).strip() : "";
          frame = frame.startsWith("at ") ? frame.substring(3) : frame;
          int module = frame.indexOf("//");
          return Optional.of(module >= 0 ? frame.substring(module + 2) : frame)
              .filter(f -> !f.isEmpty())
              .or(() -> Optional.of("a virtual thread"));
        }
      }
      return Optional.empty();
    } catch (IOException | RuntimeException e) {
      return Optional.of("an unknown thread (" + e + ")");
    } finally {
      if (dump != null) {
        try {
          Files.deleteIfExists(dump);
        } catch (IOException e) {
          // a temp file left behind
        }
      }
    }
  }

  /** The frame that called {@code Runtime.exit}, in whichever thread is in it. */
  static Optional<StackTraceElement> exitCaller(Map<Thread, StackTraceElement[]> stacks) {
    for (StackTraceElement[] stack : stacks.values()) {
      for (int i = 0; i < stack.length; i++) {
        if (stack[i].getClassName().equals("java.lang.Runtime")
            && stack[i].getMethodName().equals("exit")) {
          int j = i + 1;
          while (j < stack.length && stack[j].getClassName().equals("java.lang.System")) {
            j++;
          }
          return Optional.of(j < stack.length ? stack[j] : stack[i]);
        }
      }
    }
    return Optional.empty();
  }
}
