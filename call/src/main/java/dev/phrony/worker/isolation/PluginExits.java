package dev.phrony.worker.isolation;

/**
 * Where a plugin's {@code Runtime.halt}, {@code Runtime.exit} and {@code System.exit} calls land:
 * the worker rewrites them to these as a plugin's classes are loaded (see {@link
 * PluginClassLoader.ClassRewriter}). A plugin must not end the worker, and a supervisor must see
 * that it did: whatever status it asked for, the process ends with {@value #STATUS} and stderr
 * names the caller. {@code halt} runs no shutdown hook, so nothing else could say it.
 *
 * <p>Public and shared with every plugin's class loader, since the rewritten calls are made from
 * the plugin's own classes.
 */
public final class PluginExits {
  /** The exit status when a plugin ends the worker (the CLI's {@code PLUGIN_EXIT}). */
  public static final int STATUS = 9;

  private static final StackWalker WALKER = StackWalker.getInstance();

  private PluginExits() {}

  /** Stands for {@code runtime.halt(status)} in a plugin's code. */
  public static void halt(Runtime runtime, int status) {
    end("Runtime.halt", status);
  }

  /** Stands for {@code runtime.exit(status)} in a plugin's code. */
  public static void exit(Runtime runtime, int status) {
    end("Runtime.exit", status);
  }

  /** Stands for {@code System.exit(status)} in a plugin's code. */
  public static void exit(int status) {
    end("System.exit", status);
  }

  /** {@code Class.method(File.java:12)}: a caller as the exit lines name it. */
  public static String frame(StackTraceElement f) {
    return f.getClassName()
        + "."
        + f.getMethodName()
        + "("
        + f.getFileName()
        + ":"
        + f.getLineNumber()
        + ")";
  }

  private static void end(String what, int asked) {
    String caller =
        WALKER
            .walk(
                frames ->
                    frames
                        .dropWhile(f -> f.getClassName().equals(PluginExits.class.getName()))
                        .findFirst()
                        .map(f -> frame(f.toStackTraceElement())))
            .orElse("an unknown caller");
    System.err.println(
        "phrony-worker: "
            + what
            + " called by "
            + caller
            + " (status "
            + asked
            + " asked), not by the host: exiting with status "
            + STATUS
            + " (a plugin must not end the worker; fix or remove it)");
    System.err.flush();
    Runtime.getRuntime().halt(STATUS);
  }
}
