package dev.phrony.worker.isolation;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Where a plugin's {@code Runtime.addShutdownHook} and {@code removeShutdownHook} calls land (the
 * worker rewrites them as the plugin's classes load): the hook is registered as asked, and noted
 * under the class loader of the class that added it, so that unloading the plugin can remove it. A
 * hook left registered pins its plugin's class loader, and everything the plugin holds, until the
 * process ends.
 *
 * <p>Public and shared with every plugin's class loader, as {@link PluginExits} is.
 */
public final class PluginHooks {
  private static final StackWalker WALKER =
      StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE);

  /** Hooks by the loader of the class that added them; guarded by itself. */
  private static final Map<ClassLoader, Set<Thread>> HOOKS = new IdentityHashMap<>();

  private PluginHooks() {}

  /** Stands for {@code runtime.addShutdownHook(hook)} in a plugin's code. */
  public static void addShutdownHook(Runtime runtime, Thread hook) {
    ClassLoader by = WALKER.getCallerClass().getClassLoader();
    runtime.addShutdownHook(hook);
    synchronized (HOOKS) {
      HOOKS.computeIfAbsent(by, k -> new LinkedHashSet<>()).add(hook);
    }
  }

  /** Stands for {@code runtime.removeShutdownHook(hook)} in a plugin's code. */
  public static boolean removeShutdownHook(Runtime runtime, Thread hook) {
    synchronized (HOOKS) {
      for (Set<Thread> hooks : HOOKS.values()) {
        hooks.remove(hook);
      }
    }
    return runtime.removeShutdownHook(hook);
  }

  /**
   * Removes the shutdown hooks classes of {@code loader} added and returns them (the ones the
   * process is already running are left alone).
   */
  public static List<Thread> removeAll(ClassLoader loader) {
    Set<Thread> hooks;
    synchronized (HOOKS) {
      hooks = HOOKS.remove(loader);
    }
    List<Thread> removed = new ArrayList<>();
    if (hooks != null) {
      for (Thread hook : hooks) {
        try {
          if (Runtime.getRuntime().removeShutdownHook(hook)) {
            removed.add(hook);
          }
        } catch (IllegalStateException shuttingDown) {
          // the process is ending: nothing is unloaded any more
        }
      }
    }
    return removed;
  }
}
