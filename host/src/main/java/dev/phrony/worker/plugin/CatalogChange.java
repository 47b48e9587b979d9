package dev.phrony.worker.plugin;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * How one {@link HandlerCatalog} differs from the next, by routing key, e.g. after a plugin reload.
 * Every list is sorted.
 *
 * @param added keys served only after
 * @param removed keys served only before
 * @param replaced keys served in both by a different handler instance or advertisement
 * @param readvertised the replaced keys whose advertisement differs (see {@link
 *     #advertisementChanged()}); a record holds no other state, so this is kept here
 */
public record CatalogChange(
    List<String> added, List<String> removed, List<String> replaced, List<String> readvertised) {

  public CatalogChange {
    added = sorted(added);
    removed = sorted(removed);
    replaced = sorted(replaced);
    readvertised = sorted(readvertised);
    if (!replaced.containsAll(readvertised)) {
      throw new IllegalArgumentException(
          "readvertised keys " + readvertised + " must be among the replaced " + replaced);
    }
  }

  /**
   * A change whose every replaced key is taken to advertise differently: the safe reading when it
   * is not known, since it only makes a caller register again.
   */
  public CatalogChange(List<String> added, List<String> removed, List<String> replaced) {
    this(added, removed, replaced, replaced);
  }

  /** The change from {@code before} to {@code after}. */
  public static CatalogChange between(HandlerCatalog before, HandlerCatalog after) {
    Map<String, HandlerCatalog.Entry> was = byKey(before);
    Map<String, HandlerCatalog.Entry> now = byKey(after);
    List<String> added = new ArrayList<>();
    List<String> replaced = new ArrayList<>();
    List<String> readvertised = new ArrayList<>();
    now.forEach(
        (key, e) -> {
          HandlerCatalog.Entry old = was.get(key);
          if (old == null) {
            added.add(key);
            return;
          }
          boolean sameAd = advertisesSame(old, e);
          // Entries are compared by handler, not by identity: overrides make a new Entry each time.
          if (old.handler() != e.handler() || !sameAd) {
            replaced.add(key);
          }
          if (!sameAd) {
            readvertised.add(key);
          }
        });
    List<String> removed = was.keySet().stream().filter(k -> !now.containsKey(k)).toList();
    return new CatalogChange(added, removed, replaced, readvertised);
  }

  /**
   * True when what the runtime is told changes: a key added or removed, or a key advertised
   * differently (tool, version, contract version, max concurrency, descriptor hash). New code
   * behind the same descriptor is not.
   */
  public boolean advertisementChanged() {
    return !added.isEmpty() || !removed.isEmpty() || !readvertised.isEmpty();
  }

  /** Nothing added, removed or replaced. */
  public boolean none() {
    return added.isEmpty() && removed.isEmpty() && replaced.isEmpty();
  }

  /** {@code added=a@1,b@2 replaced= removed=c@1}: for a log line. */
  public String summary() {
    return "added="
        + String.join(",", added)
        + " replaced="
        + String.join(",", replaced)
        + " removed="
        + String.join(",", removed);
  }

  /** What the runtime sees of an entry; the runtime reads a max concurrency below 1 as 1. */
  private static boolean advertisesSame(HandlerCatalog.Entry a, HandlerCatalog.Entry b) {
    return Objects.equals(a.descriptor().tool(), b.descriptor().tool())
        && Objects.equals(a.descriptor().version(), b.descriptor().version())
        && Objects.equals(a.descriptor().contractVersion(), b.descriptor().contractVersion())
        && Math.max(1, a.descriptor().maxConcurrency())
            == Math.max(1, b.descriptor().maxConcurrency())
        && Objects.equals(a.descriptorHash(), b.descriptorHash());
  }

  private static Map<String, HandlerCatalog.Entry> byKey(HandlerCatalog catalog) {
    Map<String, HandlerCatalog.Entry> out = new LinkedHashMap<>();
    catalog.entries().forEach(e -> out.put(e.key(), e));
    return out;
  }

  private static List<String> sorted(List<String> keys) {
    return keys.stream().sorted().toList();
  }
}
