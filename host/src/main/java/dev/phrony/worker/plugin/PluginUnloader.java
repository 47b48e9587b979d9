package dev.phrony.worker.plugin;

import dev.phrony.worker.isolation.PluginClassLoader;
import dev.phrony.worker.isolation.PluginHooks;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;
import java.util.function.ToIntFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Unloads an old plugin generation's class loaders for real, or says why it cannot, as a servlet
 * container does on undeploy. For each loader, on a thread of its own:
 *
 * <ol>
 *   <li>removes the shutdown hooks the plugin added ({@link PluginHooks}), deregisters the JDBC
 *       drivers it registered, interrupts the threads it started (their class or context class
 *       loader is its) and waits for them up to {@link #THREAD_WAIT} in all, ends the idle host
 *       threads that ran its calls (with whatever it left in their {@code ThreadLocal}s), and
 *       closes the loader;
 *   <li>watches it with a weak reference through {@link #GCS} garbage collections: unloaded, it is
 *       logged at DEBUG; still reachable, it is a leak: logged at WARN with what the worker can see
 *       pinning it (threads of the plugin still alive, hooks, drivers) and counted per plugin
 *       ({@code phrony_worker_plugin_loaders_leaked{plugin}}).
 * </ol>
 *
 * <p>A plugin with {@code maxLeaked} leaked loaders is not reloaded again ({@link #refusal}): each
 * leak keeps all the plugin's classes and static data, and reloads would grow the heap until it
 * runs out. A restart of the worker clears it.
 */
public final class PluginUnloader implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PluginUnloader.class);

  /** How long the plugin's own threads get, in all, to end once interrupted. */
  static final long THREAD_WAIT_MS = 2_000;

  /**
   * Garbage collections (a second apart) after which a loader still held by a pin the worker can
   * name (a thread of the plugin's) is a leak.
   */
  static final int GCS = 3;

  /**
   * Further collections, {@link #SLOW_GC_SECONDS} apart, before a loader held by nothing the worker
   * can name is a leak: a host thread busy with other calls may still hold the plugin's {@code
   * ThreadLocal}s, and is ended once idle.
   */
  static final int SLOW_GCS = 6;

  static final long SLOW_GC_SECONDS = 5;

  /** {@code --max-leaked-loaders}'s default: leaked loaders of one plugin before reloads stop. */
  public static final int DEFAULT_MAX_LEAKED = 3;

  private final int maxLeaked;
  private final ToIntFunction<ClassLoader> releaseHostThreads;
  private final BiConsumer<String, Integer> onLeak;
  private final Map<String, Integer> leaked = new ConcurrentHashMap<>();
  private final AtomicInteger pending = new AtomicInteger();
  private final Map<String, String> lastPins = new ConcurrentHashMap<>();
  private final ExecutorService thread =
      Executors.newSingleThreadExecutor(
          Thread.ofPlatform().name("phrony-plugin-unload").daemon().factory());

  /**
   * @param maxLeaked leaked loaders of one plugin after which its reloads are refused
   * @param releaseHostThreads releases the host threads that ran plugin code from a loader (ends
   *     the idle handler threads, removes its {@code ThreadLocal}s from the I/O threads; returns
   *     the values removed)
   * @param onLeak told of each plugin's leaked count as it grows (a metric)
   */
  public PluginUnloader(
      int maxLeaked,
      ToIntFunction<ClassLoader> releaseHostThreads,
      BiConsumer<String, Integer> onLeak) {
    this.maxLeaked = maxLeaked;
    this.releaseHostThreads = releaseHostThreads;
    this.onLeak = onLeak;
  }

  /** Cleans up, closes and watches {@code loaders}, on the unloader's thread; returns at once. */
  public void unload(Collection<? extends ClassLoader> loaders) {
    for (ClassLoader loader : loaders) {
      // The task lets go of the loader before it watches it: a queued task holding it strongly
      // would itself be the pin.
      AtomicReference<ClassLoader> held = new AtomicReference<>(loader);
      pending.incrementAndGet();
      try {
        thread.execute(
            () -> {
              try {
                ClassLoader l = held.getAndSet(null);
                String plugin = l.getName() == null ? l.toString() : l.getName();
                cleanUp(plugin, l);
                WeakReference<ClassLoader> ref = new WeakReference<>(l);
                l = null;
                watch(plugin, ref);
              } finally {
                pending.decrementAndGet();
              }
            });
      } catch (java.util.concurrent.RejectedExecutionException stopping) {
        pending.decrementAndGet();
        LoadResult.close(List.of(loader));
      }
    }
  }

  /** Why {@code plugin} (a loader's name) must not be reloaded again, if it must not. */
  public Optional<String> refusal(String plugin) {
    int n = leaked.getOrDefault(plugin, 0);
    if (n < maxLeaked) {
      return Optional.empty();
    }
    return Optional.of(
        "plugin "
            + plugin
            + " is not reloaded: "
            + n
            + " of its old class loaders are still in memory ("
            + lastPins.getOrDefault(plugin, "pinned by something the worker cannot see")
            + "), and each reload would keep another until the heap runs out (limit"
            + " --max-leaked-loaders="
            + maxLeaked
            + "). Fix the plugin (docs/plugins.md, 'What a plugin must not do') and restart"
            + " the worker");
  }

  /** Loaders handed to {@link #unload} whose watch has not ended yet. */
  public int pending() {
    return pending.get();
  }

  /** Leaked loaders by plugin, sorted. */
  public Map<String, Integer> leaked() {
    return new TreeMap<>(leaked);
  }

  private void cleanUp(String plugin, ClassLoader loader) {
    List<String> cleaned = new ArrayList<>();
    for (Thread hook : PluginHooks.removeAll(loader)) {
      cleaned.add("shutdown hook '" + hook.getName() + "' removed");
    }
    if (loader instanceof PluginClassLoader p) {
      for (String driver : p.deregisterJdbcDrivers()) {
        cleaned.add("JDBC driver " + driver + " deregistered");
      }
    }
    List<Thread> own = threadsOf(loader);
    own.forEach(Thread::interrupt);
    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(THREAD_WAIT_MS);
    for (Thread t : own) {
      long left = until - System.nanoTime();
      if (left > 0) {
        try {
          t.join(java.time.Duration.ofNanos(left));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
      if (!t.isAlive()) {
        cleaned.add("thread '" + t.getName() + "' ended");
      }
    }
    int locals = releaseHostThreads.applyAsInt(loader);
    if (locals > 0) {
      cleaned.add(locals + " ThreadLocal value(s) removed from host threads");
    }
    LoadResult.close(List.of(loader));
    if (!cleaned.isEmpty()) {
      log.info("plugin {} unloading: {}", plugin, String.join(", ", cleaned));
    }
  }

  private void watch(String plugin, WeakReference<ClassLoader> ref) {
    try {
      boolean gone =
          collected(ref, GCS, 0)
              || (namedPins(ref).isEmpty() && collected(ref, SLOW_GCS, SLOW_GC_SECONDS));
      if (gone) {
        log.debug("plugin {}: its old class loader is unloaded", plugin);
        return;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return;
    }
    List<String> named = namedPins(ref);
    if (ref.refersTo(null)) {
      return;
    }
    String pins =
        named.isEmpty()
            ? "no thread, shutdown hook or JDBC driver of it is left; something else holds it (a"
                + " ThreadLocal on a thread it does not own, a static field of a shared or JDK"
                + " class, a cache): a heap dump (jcmd PID GC.heap_dump FILE) shows the path to it"
            : "pinned by " + String.join(", ", named);
    int n = leaked.merge(plugin, 1, Integer::sum);
    lastPins.put(plugin, pins);
    log.warn(
        "plugin {}: an old class loader is still in memory after {} garbage collections (a leak,"
            + " {} of this plugin so far; at {} its reloads are refused): {}. Its classes and static"
            + " data stay until the worker restarts",
        plugin,
        named.isEmpty() ? GCS + SLOW_GCS : GCS,
        n,
        maxLeaked,
        pins);
    onLeak.accept(plugin, n);
  }

  /** Waits up to a second for {@code ref} to be cleared (GC reference processing is concurrent). */
  private static boolean waitCleared(WeakReference<ClassLoader> ref) throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
    while (System.nanoTime() < until) {
      if (ref.refersTo(null)) {
        return true;
      }
      TimeUnit.MILLISECONDS.sleep(20);
    }
    return ref.refersTo(null);
  }

  /**
   * {@code times} collections, {@code apartSeconds} apart (after the first), each followed by a
   * second's wait for the reference to clear and by ending idle host threads; true once cleared.
   */
  private boolean collected(WeakReference<ClassLoader> ref, int times, long apartSeconds)
      throws InterruptedException {
    for (int i = 0; i < times; i++) {
      if (i > 0 && apartSeconds > 0) {
        TimeUnit.SECONDS.sleep(apartSeconds);
      }
      System.gc();
      if (waitCleared(ref)) {
        return true;
      }
      ClassLoader l = ref.get(); // threads busy at the last try may be idle now
      if (l != null) {
        releaseHostThreads.applyAsInt(l);
      }
      l = null;
    }
    return false;
  }

  /** What the worker can see holding the loader: its threads still alive. */
  private static List<String> namedPins(WeakReference<ClassLoader> ref) {
    ClassLoader loader = ref.get();
    if (loader == null) {
      return List.of();
    }
    List<String> pins = new ArrayList<>();
    for (Thread t : threadsOf(loader)) {
      StackTraceElement[] at = t.getStackTrace();
      pins.add(
          "thread '"
              + t.getName()
              + "' ("
              + t.getState()
              + (at.length > 0 ? " at " + at[0] : "")
              + ") ignores its interrupt");
    }
    return pins;
  }

  /** Live platform threads the plugin started: their class or context class loader is its. */
  private static List<Thread> threadsOf(ClassLoader loader) {
    List<Thread> own = new ArrayList<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t != Thread.currentThread()
          && t.isAlive()
          && (t.getContextClassLoader() == loader || t.getClass().getClassLoader() == loader)) {
        own.add(t);
      }
    }
    return own;
  }

  @Override
  public void close() {
    thread.shutdownNow();
  }
}
