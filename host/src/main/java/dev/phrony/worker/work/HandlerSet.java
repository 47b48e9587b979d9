package dev.phrony.worker.work;

import dev.phrony.worker.plugin.HandlerCatalog;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The handlers one registration advertises, each with its own slots: the runtime counts a key's
 * calls per registration, so a new plugin generation on a second stream starts from zero while the
 * old one winds down. A stream serves exactly its set ({@link CallSink#handlers}).
 */
final class HandlerSet {
  /** In the dispatcher's context, as every reader of it ({@link #rebind} writes it there too). */
  private HandlerCatalog catalog;

  private final Map<String, ToolSlots> byKey;

  /** The same slots by tool, then version: an invoke finds its own without building its key. */
  private final Map<String, Map<String, ToolSlots>> byTool;

  /** {@code slotsOf} makes each key's slots (with its meters). */
  HandlerSet(HandlerCatalog catalog, Function<HandlerCatalog.Entry, ToolSlots> slotsOf) {
    this.catalog = catalog;
    Map<String, ToolSlots> t = new HashMap<>();
    catalog.entries().forEach(e -> t.put(e.key(), slotsOf.apply(e)));
    this.byKey = Map.copyOf(t);
    this.byTool =
        Map.copyOf(
            byKey.values().stream()
                .collect(
                    Collectors.groupingBy(
                        s -> s.entry.descriptor().tool(),
                        Collectors.toUnmodifiableMap(
                            s -> s.entry.descriptor().version(), s -> s))));
  }

  /** What this set advertises (and, after a rebind, runs). */
  HandlerCatalog catalog() {
    return catalog;
  }

  /** The slots of {@code tool@version}, or null when this set does not serve it. */
  ToolSlots find(String tool, String version) {
    Map<String, ToolSlots> versions = byTool.get(tool);
    return versions == null ? null : versions.get(version);
  }

  ToolSlots get(String key) {
    return byKey.get(key);
  }

  Collection<ToolSlots> all() {
    return byKey.values();
  }

  /**
   * In the context: later calls of each key this set advertises exactly as {@code next} does start
   * on {@code next}'s handler; other keys are left as they are (an older generation winding down
   * serves its own advertisement, and the new code where that is the same).
   */
  void rebind(HandlerCatalog next) {
    int rebound = 0;
    for (HandlerCatalog.Entry e : next.entries()) {
      ToolSlots s = byKey.get(e.key());
      if (s != null
          && s.entry.descriptorHash().equals(e.descriptorHash())
          && s.max == Dispatcher.slotsOf(e)) {
        s.rebind(e);
        rebound++;
      }
    }
    if (rebound == byKey.size() && rebound == next.size()) {
      catalog = next; // it advertises what it did; it runs next's handlers
    }
  }
}
