package dev.phrony.worker.plugin;

import java.lang.ref.Reference;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Removes from the calling thread the {@code ThreadLocal} values an unloaded plugin left on it: a
 * thread the host keeps (a Work stream's I/O thread, where {@code handleAsync} runs) would
 * otherwise hold the plugin's class loader, all its classes and static data, for as long as it
 * lives.
 *
 * <p>The JDK has no API to list a thread's {@code ThreadLocal}s, so this reads {@code
 * Thread.threadLocals} by reflection, which needs {@code --add-opens java.base/java.lang} (the
 * launcher gives it). Without it, nothing is removed and the unloader's leak watch names what
 * stays. A thread's map is not thread-safe: this only ever touches the calling thread's own.
 *
 * <p>An entry is the plugin's when the {@code ThreadLocal}'s class or its value's class (or, for an
 * array, its component class) was defined by the plugin's loader; a value that holds plugin objects
 * inside a JDK collection is not recognised.
 */
public final class ThreadLocalSweep {
  private static final Logger log = LoggerFactory.getLogger(ThreadLocalSweep.class);

  /** {@code Thread.threadLocals} and {@code inheritableThreadLocals}; null when not opened. */
  private static final Field[] MAPS;

  private static final Field TABLE;
  private static final Field VALUE;

  static {
    Field[] maps = null;
    Field table = null;
    Field value = null;
    try {
      Field locals = Thread.class.getDeclaredField("threadLocals");
      Field inheritable = Thread.class.getDeclaredField("inheritableThreadLocals");
      Class<?> map = Class.forName("java.lang.ThreadLocal$ThreadLocalMap");
      Class<?> entry = Class.forName("java.lang.ThreadLocal$ThreadLocalMap$Entry");
      table = map.getDeclaredField("table");
      value = entry.getDeclaredField("value");
      for (Field f : new Field[] {locals, inheritable, table, value}) {
        f.setAccessible(true);
      }
      maps = new Field[] {locals, inheritable};
    } catch (ReflectiveOperationException | RuntimeException e) {
      log.debug(
          "ThreadLocals of unloaded plugins are not cleared from host threads (the JVM was started"
              + " without --add-opens java.base/java.lang=ALL-UNNAMED): {}",
          e.toString());
    }
    MAPS = maps;
    TABLE = table;
    VALUE = value;
  }

  private ThreadLocalSweep() {}

  /** Whether the JVM lets the sweep read threads' maps. */
  public static boolean available() {
    return MAPS != null;
  }

  /**
   * Removes the calling thread's {@code ThreadLocal} values that belong to {@code loader}'s
   * classes; returns how many.
   */
  public static int clearCurrentThread(ClassLoader loader) {
    if (MAPS == null) {
      return 0;
    }
    int cleared = 0;
    try {
      for (Field mapField : MAPS) {
        Object map = mapField.get(Thread.currentThread());
        if (map == null) {
          continue;
        }
        List<ThreadLocal<?>> theirs = new ArrayList<>();
        for (Object entry : (Object[]) TABLE.get(map)) {
          if (entry == null) {
            continue;
          }
          ThreadLocal<?> key = (ThreadLocal<?>) ((Reference<?>) entry).get();
          Object value = VALUE.get(entry);
          if (definedBy(key, loader) || definedBy(value, loader)) {
            if (key != null) {
              theirs.add(key);
            } else {
              VALUE.set(entry, null); // a stale entry: its key is gone, its value is not yet
              cleared++;
            }
          }
        }
        // remove() on this thread acts on this thread's map, the one read above.
        for (ThreadLocal<?> t : theirs) {
          t.remove();
          cleared++;
        }
      }
    } catch (IllegalAccessException e) {
      log.debug("could not clear ThreadLocals of a plugin: {}", e.toString());
    }
    return cleared;
  }

  private static boolean definedBy(Object o, ClassLoader loader) {
    if (o == null) {
      return false;
    }
    Class<?> c = o.getClass();
    while (c.isArray()) {
      c = c.getComponentType();
    }
    return c.getClassLoader() == loader || o == loader;
  }
}
