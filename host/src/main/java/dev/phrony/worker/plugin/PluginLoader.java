package dev.phrony.worker.plugin;

import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.call.ContextClassLoader;
import dev.phrony.worker.isolation.PluginClassLoader;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import java.util.zip.ZipEntry;
import java.util.zip.ZipException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads the plugins of a plugins directory into a {@link HandlerCatalog}.
 *
 * <p>Each child of the directory is one plugin ({@link PluginFolder}): a jar, or a folder of jars
 * (its own, and libraries in {@code lib/}). Each gets its own {@link PluginClassLoader}; its
 * handlers are the {@link ToolHandler}s its jars list in {@value #SERVICES_FILE}, created with the
 * plugin's classloader as the thread context classloader.
 *
 * <p>Anything wrong with a plugin is contained to it: the plugin is skipped and every problem found
 * in it is reported as a {@link LoadProblem}, while the other plugins load. The one exception is a
 * {@code tool@version} offered by more than one handler: that key is refused for all of them
 * (rather than served by whichever loaded first), and their other keys are served.
 *
 * <p>Classloaders of loaded plugins stay open: the catalog's handlers run on them. After a {@link
 * #reload}, the caller closes those the new result no longer uses ({@link LoadResult#unusedBy},
 * {@link LoadResult#close}) once no call runs on them.
 */
public final class PluginLoader {
  private static final Logger log = LoggerFactory.getLogger(PluginLoader.class);

  /** Where a plugin lists its handler classes. */
  public static final String SERVICES_FILE = "META-INF/services/dev.phrony.worker.api.ToolHandler";

  private static final String API_PATH = ToolHandler.class.getPackageName().replace('.', '/') + "/";

  private final ClassLoader host;

  /** A loader whose plugins share the plugin API and SLF4J of the classloader that loaded it. */
  public PluginLoader() {
    this(ToolHandler.class.getClassLoader());
  }

  /**
   * @param host where plugins get the shared packages ({@code dev.phrony.worker.api}, {@code
   *     org.slf4j}) from
   */
  PluginLoader(ClassLoader host) {
    this.host = host;
  }

  /**
   * Loads every plugin in {@code pluginsDir}.
   *
   * @throws PluginDirectoryException when the directory is missing, not a directory or cannot be
   *     listed
   */
  public LoadResult load(Path pluginsDir) {
    return reload(pluginsDir, LoadResult.empty());
  }

  /**
   * Loads {@code pluginsDir} as {@link #load} does, except that a plugin whose path, jars and jar
   * digests are those of a plugin that loaded cleanly in {@code previous} is not loaded again: its
   * entries from {@code previous} (same handler instances, same classloader) are used. Every other
   * plugin gets a new classloader. Duplicate keys are refused over the combined set, so a key
   * refused before is served once its other offer is gone.
   *
   * <p>Nothing of {@code previous} is closed: {@link LoadResult#unusedBy} names the classloaders to
   * close once no call runs on them.
   *
   * @throws PluginDirectoryException when the directory is missing, not a directory or cannot be
   *     listed
   */
  public LoadResult reload(Path pluginsDir, LoadResult previous) {
    Map<PluginSource, LoadResult.LoadedPlugin> reusable = new HashMap<>();
    previous.loaded().forEach(p -> reusable.put(p.source(), p));
    List<PluginSource> sources = new ArrayList<>();
    List<LoadProblem> problems = new ArrayList<>();
    List<LoadResult.LoadedPlugin> loadedPlugins = new ArrayList<>();
    List<HandlerCatalog.Entry> entries = new ArrayList<>();
    int reused = 0;
    for (Path plugin : PluginFolder.candidates(pluginsDir)) {
      Loaded loaded = load1(plugin, reusable);
      loaded.source().ifPresent(sources::add);
      problems.addAll(loaded.problems());
      entries.addAll(loaded.entries());
      loaded.plugin().ifPresent(loadedPlugins::add);
      reused += loaded.reused() ? 1 : 0;
    }
    List<HandlerCatalog.Entry> served = refuseDuplicateKeys(entries, problems);
    problems.sort(Comparator.comparing(LoadProblem::plugin)); // stable: keeps order within one
    log.debug(
        "plugins loaded dir={} plugins={} reused={} handlers={} problems={}",
        pluginsDir,
        sources.size(),
        reused,
        served.size(),
        problems.size());
    return new LoadResult(HandlerCatalog.of(served), problems, sources, loadedPlugins);
  }

  /**
   * What loading one plugin gave: its source (when its jars were readable), problems, handlers,
   * and, when it loaded cleanly, the plugin to record ({@code reused} when taken from before).
   */
  private record Loaded(
      Optional<PluginSource> source,
      List<LoadProblem> problems,
      List<HandlerCatalog.Entry> entries,
      Optional<LoadResult.LoadedPlugin> plugin,
      boolean reused) {

    static Loaded clean(LoadResult.LoadedPlugin plugin, boolean reused) {
      return new Loaded(
          Optional.of(plugin.source()), List.of(), plugin.entries(), Optional.of(plugin), reused);
    }
  }

  @SuppressWarnings("try") // the context classloader swap is used only for its scope
  private Loaded load1(Path plugin, Map<PluginSource, LoadResult.LoadedPlugin> reusable) {
    String id = plugin.toString();
    Optional<String> badLink = PluginFolder.linkProblem(plugin);
    if (badLink.isPresent()) {
      return failed(null, id, badLink.get());
    }
    List<Path> jarPaths;
    try {
      jarPaths = jarsOf(plugin);
    } catch (IOException e) {
      return failed(null, id, "cannot list the plugin folder (" + e + "): check its permissions");
    }
    if (jarPaths.isEmpty()) {
      return failed(
          null,
          id,
          "the plugin folder holds no jars: put the plugin's jar in it (and "
              + "its libraries in lib/), or remove the folder");
    }

    // Digests first: identical bytes mean the plugin as loaded before can be kept as it is.
    List<PluginSource.Jar> jars = new ArrayList<>();
    Map<Path, String> unreadable = new HashMap<>();
    for (Path jar : jarPaths) {
      try {
        jars.add(new PluginSource.Jar(jar, sha256(jar)));
      } catch (IOException e) {
        unreadable.put(
            jar,
            "cannot read "
                + label(plugin, jar)
                + " ("
                + e
                + "): check that it "
                + "is a readable file");
      }
    }
    PluginSource source = jars.isEmpty() ? null : new PluginSource(plugin, jars);
    LoadResult.LoadedPlugin before = unreadable.isEmpty() ? reusable.get(source) : null;
    if (before != null) {
      log.debug("plugin unchanged, kept plugin={}", id);
      return Loaded.clean(before, true);
    }

    List<String> reasons = new ArrayList<>();
    for (Path jar : jarPaths) {
      String cannotRead = unreadable.get(jar);
      if (cannotRead != null) {
        reasons.add(cannotRead);
      } else {
        inspect(jar, label(plugin, jar)).ifPresent(reasons::add);
      }
    }
    if (!reasons.isEmpty()) {
      return failed(source, id, reasons);
    }

    PluginClassLoader loader =
        new PluginClassLoader(
            plugin.getFileName().toString(), jarPaths, host, ExitCallRewriter.INSTANCE);
    List<HandlerCatalog.Entry> entries = new ArrayList<>();
    try (var tccl = ContextClassLoader.swap(loader)) {
      HandlerDiscovery.discover(loader, id, reasons, entries);
    }
    if (reasons.isEmpty() && entries.isEmpty()) {
      reasons.add(
          "no tool handlers found: add "
              + SERVICES_FILE
              + " to the jar, listing your "
              + "handler classes by fully qualified name, one per line");
    }
    if (!reasons.isEmpty()) {
      close(loader, id);
      return failed(source, id, reasons);
    }
    log.debug(
        "plugin loaded plugin={} handlers={}",
        id,
        entries.stream().map(HandlerCatalog.Entry::key).collect(Collectors.joining(",")));
    return Loaded.clean(new LoadResult.LoadedPlugin(source, loader, entries), false);
  }

  /** How a jar is named in a reason: its file name, or its path inside the plugin folder. */
  private static String label(Path plugin, Path jar) {
    return plugin.equals(jar) ? jar.getFileName().toString() : plugin.relativize(jar).toString();
  }

  private static Loaded failed(PluginSource source, String id, String reason) {
    return failed(source, id, List.of(reason));
  }

  private static Loaded failed(PluginSource source, String id, List<String> reasons) {
    return new Loaded(
        Optional.ofNullable(source),
        reasons.stream().map(r -> new LoadProblem(id, r)).toList(),
        List.of(),
        Optional.empty(),
        false);
  }

  /** A jar plugin is itself; a folder plugin is its own jars, then {@code lib/*.jar}. */
  private static List<Path> jarsOf(Path plugin) throws IOException {
    if (!Files.isDirectory(plugin)) {
      return List.of(plugin);
    }
    List<Path> jars = new ArrayList<>(jarsIn(plugin));
    Path lib = plugin.resolve("lib");
    if (Files.isDirectory(lib)) {
      jars.addAll(jarsIn(lib));
    }
    return jars;
  }

  private static List<Path> jarsIn(Path dir) throws IOException {
    List<Path> jars = new ArrayList<>();
    try (DirectoryStream<Path> children = Files.newDirectoryStream(dir)) {
      for (Path child : children) {
        String name = child.getFileName().toString();
        if (!name.startsWith(".") && PluginFolder.isJar(name) && Files.isRegularFile(child)) {
          jars.add(child);
        }
      }
    }
    jars.sort(Comparator.comparing(p -> p.getFileName().toString()));
    return jars;
  }

  private static String sha256(Path file) throws IOException {
    MessageDigest md = ImageDigest.sha256();
    try (InputStream in = new DigestInputStream(Files.newInputStream(file), md)) {
      in.transferTo(OutputStream.nullOutputStream());
    }
    return HexFormat.of().formatHex(md.digest());
  }

  /** Opens {@code jar} as a zip and looks for a bundled copy of the plugin API. */
  private static Optional<String> inspect(Path jar, String label) {
    try (JarFile jf = new JarFile(jar.toFile(), false)) {
      return jf.stream()
          .map(ZipEntry::getName)
          .filter(n -> n.startsWith(API_PATH) && n.endsWith(".class"))
          .findFirst()
          .map(
              n ->
                  "bundles its own copy of the plugin API ("
                      + n
                      + " in "
                      + label
                      + "): "
                      + "depend on phrony-plugin-api with <scope>provided</scope> so that it is not "
                      + "packaged; the host provides it");
    } catch (ZipException e) {
      return Optional.of(
          label
              + " is not a valid jar ("
              + e.getMessage()
              + "): rebuild it, "
              + "or remove it from the plugins directory");
    } catch (IOException e) {
      return Optional.of(
          "cannot read "
              + label
              + " as a jar ("
              + e
              + "): rebuild it, or remove "
              + "it from the plugins directory");
    }
  }

  /**
   * Keeps entries whose key no other entry has; for the others, reports each with whoever else
   * offers the key.
   */
  private static List<HandlerCatalog.Entry> refuseDuplicateKeys(
      List<HandlerCatalog.Entry> entries, List<LoadProblem> problems) {
    Map<String, List<HandlerCatalog.Entry>> byKey = new LinkedHashMap<>();
    entries.forEach(e -> byKey.computeIfAbsent(e.key(), k -> new ArrayList<>()).add(e));
    List<HandlerCatalog.Entry> served = new ArrayList<>();
    byKey.forEach(
        (key, offers) -> {
          if (offers.size() == 1) {
            served.add(offers.getFirst());
            return;
          }
          for (HandlerCatalog.Entry e : offers) {
            String others =
                offers.stream()
                    .filter(o -> o != e)
                    .map(
                        o ->
                            o.handler().getClass().getName()
                                + " in "
                                + (o.plugin().equals(e.plugin()) ? "this plugin" : o.plugin()))
                    .collect(Collectors.joining(", "));
            problems.add(
                new LoadProblem(
                    e.plugin(),
                    key
                        + " (handler "
                        + e.handler().getClass().getName()
                        + ") is also offered by "
                        + others
                        + ": the key is refused for all of them; remove one, or give it another tool name "
                        + "or version"));
          }
        });
    return served;
  }

  private static void close(PluginClassLoader loader, String id) {
    try {
      loader.close();
    } catch (IOException e) {
      log.debug("closing the classloader of a skipped plugin failed plugin={}", id, e);
    }
  }
}
