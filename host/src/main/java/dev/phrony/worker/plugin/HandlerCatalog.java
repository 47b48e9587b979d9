package dev.phrony.worker.plugin;

import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.call.ArgsCheck;
import dev.phrony.worker.call.InputSchemas;
import dev.phrony.worker.call.SchemaCheck;
import java.time.Duration;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The handlers this host serves, by routing key {@code tool@version}. Immutable: built once by the
 * plugin loader (or by a test from handlers it made) and shared by every session.
 */
public final class HandlerCatalog {

  /**
   * One served handler.
   *
   * @param descriptor what it serves, as validated at load time
   * @param handler the instance that runs calls
   * @param classLoader the plugin's classloader: the thread context classloader of every call
   * @param plugin where it came from (the plugin's path, or a name for built-in handlers)
   * @param descriptorHash {@link DescriptorHash#of(ToolDescriptor)}
   * @param argsCheck the descriptor's input schema, compiled ({@link ArgsCheck#NONE} without one)
   * @param maxRunTime an operator's bound on any call's run time, if set
   */
  public record Entry(
      ToolDescriptor descriptor,
      ToolHandler handler,
      ClassLoader classLoader,
      String plugin,
      String descriptorHash,
      ArgsCheck argsCheck,
      Optional<Duration> maxRunTime) {

    public Entry {
      maxRunTime = maxRunTime == null ? Optional.empty() : maxRunTime;
    }

    /** As loaded, without an operator's bound. */
    public Entry(
        ToolDescriptor descriptor,
        ToolHandler handler,
        ClassLoader classLoader,
        String plugin,
        String descriptorHash,
        ArgsCheck argsCheck) {
      this(descriptor, handler, classLoader, plugin, descriptorHash, argsCheck, Optional.empty());
    }

    /**
     * This entry with an operator's settings: {@code maxConcurrency} advertised and counted, {@code
     * maxRunTime} bounding each call. The descriptor hash stays the plugin's.
     */
    public Entry withOverrides(int maxConcurrency, Optional<Duration> maxRunTime) {
      ToolDescriptor d = descriptor;
      ToolDescriptor changed =
          new ToolDescriptor(
              d.tool(),
              d.version(),
              d.contractVersion(),
              maxConcurrency,
              d.sideEffectClass(),
              d.description(),
              d.inputSchema());
      return new Entry(
          changed, handler, classLoader, plugin, descriptorHash, argsCheck, maxRunTime);
    }

    /**
     * An entry for a handler created in this JVM (tests, embedded use).
     *
     * @throws SchemaCheck.InvalidSchemaException if its input schema cannot serve
     */
    public static Entry of(ToolHandler handler, String plugin) {
      ToolDescriptor d = InputSchemas.effective(handler, handler.descriptor());
      return new Entry(
          d,
          handler,
          handler.getClass().getClassLoader(),
          plugin,
          DescriptorHash.of(d),
          SchemaCheck.of(d.inputSchema()));
    }

    public String key() {
      return descriptor.key();
    }
  }

  private final Map<String, Entry> byKey;

  private HandlerCatalog(Map<String, Entry> byKey) {
    this.byKey = byKey;
  }

  /**
   * @throws IllegalArgumentException when two entries share a key (the loader reports those as
   *     problems and never passes them here)
   */
  public static HandlerCatalog of(Collection<Entry> entries) {
    Map<String, Entry> map = new LinkedHashMap<>();
    entries.stream()
        .sorted(Comparator.comparing(Entry::key))
        .forEach(
            e -> {
              if (map.putIfAbsent(e.key(), e) != null) {
                throw new IllegalArgumentException("duplicate handler key " + e.key());
              }
            });
    return new HandlerCatalog(map);
  }

  /** The entry for {@code tool@version}, if served. */
  public Optional<Entry> find(String tool, String version) {
    return Optional.ofNullable(byKey.get(tool + "@" + version));
  }

  /** All entries, sorted by key. */
  public List<Entry> entries() {
    return List.copyOf(byKey.values());
  }

  public int size() {
    return byKey.size();
  }
}
