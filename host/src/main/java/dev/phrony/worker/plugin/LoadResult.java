package dev.phrony.worker.plugin;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What {@link PluginLoader#load} found: the handlers to serve, every problem, and the plugins seen.
 * Problems never stop the other plugins from loading; whether any problem is fatal (as with {@code
 * --strict}) is the caller's decision.
 *
 * @param catalog the handlers of every plugin that loaded cleanly, minus refused duplicate keys
 * @param problems every problem, sorted by plugin path
 * @param plugins every plugin found whose jars could be read, loaded or not, sorted by path
 * @param loaded every plugin that loaded cleanly (no problem of its own, at least one handler),
 *     with all its entries before duplicate keys were refused, sorted by path: what {@link
 *     PluginLoader#reload} may reuse, and whose classloaders this result holds open
 */
public record LoadResult(
    HandlerCatalog catalog,
    List<LoadProblem> problems,
    List<PluginSource> plugins,
    List<LoadedPlugin> loaded) {
  private static final Logger log = LoggerFactory.getLogger(LoadResult.class);

  public LoadResult {
    Objects.requireNonNull(catalog, "catalog");
    problems = List.copyOf(problems);
    plugins = List.copyOf(plugins);
    loaded = List.copyOf(loaded);
  }

  /**
   * A result that records no loaded plugins: a later {@link PluginLoader#reload} from it reuses
   * nothing, and it owns no classloaders.
   */
  public LoadResult(
      HandlerCatalog catalog, List<LoadProblem> problems, List<PluginSource> plugins) {
    this(catalog, problems, plugins, List.of());
  }

  /** Nothing loaded: what a first {@link PluginLoader#reload} starts from. */
  public static LoadResult empty() {
    return new LoadResult(HandlerCatalog.of(List.of()), List.of(), List.of(), List.of());
  }

  /**
   * One plugin that loaded cleanly.
   *
   * @param source its path and jar digests, as found when it was loaded
   * @param classLoader the classloader its handlers were created in
   * @param entries its handlers as loaded, including keys refused as duplicates
   */
  public record LoadedPlugin(
      PluginSource source, ClassLoader classLoader, List<HandlerCatalog.Entry> entries) {
    public LoadedPlugin {
      Objects.requireNonNull(source, "source");
      Objects.requireNonNull(classLoader, "classLoader");
      entries = List.copyOf(entries);
      if (entries.isEmpty()) {
        throw new IllegalArgumentException(
            "a loaded plugin has at least one handler: " + source.path());
      }
    }
  }

  public boolean hasProblems() {
    return !problems.isEmpty();
  }

  /** {@link ImageDigest#of(java.util.Collection)} of {@link #plugins()}. */
  public String imageDigest() {
    return ImageDigest.of(plugins);
  }

  /** The classloaders of every plugin that loaded (an identity set, unmodifiable). */
  public Set<ClassLoader> classLoaders() {
    Set<ClassLoader> out = Collections.newSetFromMap(new IdentityHashMap<>());
    loaded.forEach(p -> out.add(p.classLoader()));
    return Collections.unmodifiableSet(out);
  }

  /**
   * This result's classloaders that {@code next} does not use, in plugin order: the ones to
   * {@linkplain #close(Collection) close} once no call runs on them any more.
   */
  public List<ClassLoader> unusedBy(LoadResult next) {
    Set<ClassLoader> kept = next.classLoaders();
    Set<ClassLoader> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    List<ClassLoader> out = new ArrayList<>();
    for (LoadedPlugin p : loaded) {
      if (!kept.contains(p.classLoader()) && seen.add(p.classLoader())) {
        out.add(p.classLoader());
      }
    }
    return List.copyOf(out);
  }

  /**
   * Closes each of {@code loaders} that can be closed (a plugin's is a {@link
   * java.net.URLClassLoader}), releasing its jar files. Never throws: a failure is logged and the
   * others are still closed, because a caller swapping catalogs must not fail over cleanup. Classes
   * already loaded keep working; loading new ones from a closed loader fails.
   */
  public static void close(Collection<? extends ClassLoader> loaders) {
    for (ClassLoader loader : loaders) {
      if (!(loader instanceof AutoCloseable closeable)) {
        log.debug("classloader not closeable, left as is loader={}", loader);
        continue;
      }
      try {
        closeable.close();
        log.debug("plugin classloader closed loader={}", loader.getName());
      } catch (Exception e) {
        log.warn(
            "closing a plugin classloader failed loader={} error={}",
            loader.getName(),
            e.toString(),
            e);
      }
    }
  }
}
