package dev.phrony.worker.isolation;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSigner;
import java.security.CodeSource;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import java.util.stream.Stream;

/**
 * The classloader of one plugin. It sees three things only:
 *
 * <ol>
 *   <li>the shared packages {@code dev.phrony.worker.api}, {@code org.slf4j} and {@code
 *       com.fasterxml.jackson.annotation} (classes and resources), always from the host, so handler
 *       types match the host's, plugin logs reach the host's logging, and the host's Jackson sees
 *       the annotations on a plugin's records (a plugin's own copy would be a different class,
 *       silently ignored); copies bundled in the plugin are never used;
 *   <li>the JDK, through the platform classloader (the parent), which wins over the plugin for
 *       classes both have, since a plugin cannot replace JDK classes safely;
 *   <li>the plugin's own jars, for everything else.
 * </ol>
 *
 * <p>Plus two classes from the host, {@link PluginExits} and {@link PluginHooks}: where a {@link
 * ClassRewriter} sends a plugin's calls that would end the process or outlive the plugin.
 *
 * <p>The host's own classpath (gRPC, protobuf, Jackson, picocli, the host's packages) is never
 * consulted, so a plugin cannot depend on it by accident and may bundle any version of any library.
 * Resources follow the same rules, except that the plugin's own resources come before the JDK's;
 * the host's resources (such as its {@code META-INF/services}) are never visible.
 *
 * <p>The worker loads each plugin in one; the plugin test harness loads the handler under test in
 * one too, over the test's class path, with the loader of its own copy of the call pipeline as the
 * host. It lives beside the pipeline so that both use these rules, not copies of them.
 */
public final class PluginClassLoader extends URLClassLoader {
  static {
    ClassLoader.registerAsParallelCapable();
  }

  private static final List<String> SHARED_PACKAGES =
      List.of("dev.phrony.worker.api.", "org.slf4j.", "com.fasterxml.jackson.annotation.");
  private static final List<String> SHARED_RESOURCES =
      List.of("dev/phrony/worker/api/", "org/slf4j/", "com/fasterxml/jackson/annotation/");

  /**
   * Changes a plugin's class file as it is defined; returns the bytes unchanged (the same array)
   * when nothing needs changing.
   */
  @FunctionalInterface
  public interface ClassRewriter {
    byte[] rewrite(String className, byte[] classFile);
  }

  private final ClassLoader host;
  private final ClassRewriter rewriter;

  private final List<Path> jars;

  /** The jars the rewriter's classes are read from, opened on first use; closed with this. */
  private final Map<Path, JarFile> openJars = new HashMap<>();

  private boolean closed; // guarded by openJars

  /**
   * @param name a name for stack traces and logs (the plugin's file name)
   * @param jars the plugin's jars, in lookup order
   * @param host where the shared packages come from (the host's own loader)
   */
  public PluginClassLoader(String name, List<Path> jars, ClassLoader host) {
    this(name, jars, host, null);
  }

  /**
   * @param rewriter applied to each of the plugin's own classes before it is defined (null: none)
   */
  public PluginClassLoader(String name, List<Path> jars, ClassLoader host, ClassRewriter rewriter) {
    super(name, urls(jars), ClassLoader.getPlatformClassLoader());
    this.host = host;
    this.rewriter = rewriter;
    this.jars = List.copyOf(jars);
  }

  /** True for classes every plugin shares with the host. */
  static boolean isShared(String className) {
    return SHARED_PACKAGES.stream().anyMatch(className::startsWith)
        || className.equals(PluginExits.class.getName())
        || className.equals(PluginHooks.class.getName());
  }

  private static boolean isSharedResource(String name) {
    String n = name.startsWith("/") ? name.substring(1) : name;
    return SHARED_RESOURCES.stream().anyMatch(n::startsWith);
  }

  @Override
  protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
    if (isShared(name)) {
      return host.loadClass(name);
    }
    synchronized (getClassLoadingLock(name)) {
      Class<?> c = findLoadedClass(name);
      if (c == null) {
        try {
          c = getParent().loadClass(name);
        } catch (ClassNotFoundException notInJdk) {
          c = findClass(name);
        }
      }
      if (resolve) {
        resolveClass(c);
      }
      return c;
    }
  }

  /** A plugin's own class, through the rewriter when there is one. */
  @Override
  protected Class<?> findClass(String name) throws ClassNotFoundException {
    if (rewriter == null) {
      return super.findClass(name);
    }
    String path = name.replace('.', '/').concat(".class");
    try {
      for (Path jar : jars) {
        byte[] bytes = read(jar, path);
        if (bytes != null) {
          bytes = rewriter.rewrite(name, bytes);
          URL from = jar.toUri().toURL();
          definePackageOf(name, jar, from);
          return defineClass(
              name, bytes, 0, bytes.length, new CodeSource(from, (CodeSigner[]) null));
        }
      }
    } catch (IOException e) {
      throw new ClassNotFoundException(name, e);
    }
    throw new ClassNotFoundException(name);
  }

  /**
   * {@code path}'s bytes in {@code jar}, or null. Read from a handle of this loader's own, not
   * through a {@code jar:} URL, whose JVM-wide cache would serve a replaced jar's old classes.
   */
  private byte[] read(Path jar, String path) throws IOException {
    if (Files.isDirectory(jar)) {
      Path file = jar.resolve(path);
      return Files.isRegularFile(file) ? Files.readAllBytes(file) : null;
    }
    JarFile file = open(jar);
    JarEntry entry = file.getJarEntry(path);
    if (entry == null) {
      return null;
    }
    try (InputStream in = file.getInputStream(entry)) {
      return in.readAllBytes();
    }
  }

  private JarFile open(Path jar) throws IOException {
    synchronized (openJars) {
      if (closed) {
        throw new IOException("plugin class loader " + getName() + " is closed");
      }
      JarFile f = openJars.get(jar);
      if (f == null) {
        f = new JarFile(jar.toFile());
        openJars.put(jar, f);
      }
      return f;
    }
  }

  /** As URLClassLoader does: a class's package, with its jar's manifest attributes. */
  private void definePackageOf(String className, Path jar, URL from) throws IOException {
    int dot = className.lastIndexOf('.');
    if (dot < 0) {
      return;
    }
    String pkg = className.substring(0, dot);
    if (getDefinedPackage(pkg) != null) {
      return;
    }
    Manifest manifest = Files.isDirectory(jar) ? null : open(jar).getManifest();
    try {
      if (manifest != null) {
        definePackage(pkg, manifest, from);
      } else {
        definePackage(pkg, null, null, null, null, null, null, null);
      }
    } catch (IllegalArgumentException definedMeanwhile) {
      // another thread defined it first (this loader is parallel capable)
    }
  }

  /**
   * Deregisters the JDBC drivers this plugin's classes registered, from inside this loader (see
   * {@link JdbcDrivers}); returns their class names. Works after {@link #close}, whose jars it does
   * not need.
   */
  @SuppressWarnings("unchecked")
  public List<String> deregisterJdbcDrivers() {
    if (!ModuleLayer.boot().findModule("java.sql").isPresent()) {
      return List.of();
    }
    try (InputStream in =
        PluginClassLoader.class.getResourceAsStream(JdbcDrivers.class.getSimpleName() + ".class")) {
      byte[] bytes = in.readAllBytes();
      Class<?> c;
      synchronized (getClassLoadingLock(JdbcDrivers.class.getName())) {
        c = findLoadedClass(JdbcDrivers.class.getName());
        if (c == null) {
          c = defineClass(JdbcDrivers.class.getName(), bytes, 0, bytes.length);
        }
      }
      return ((java.util.function.Supplier<List<String>>) c.getConstructor().newInstance()).get();
    } catch (IOException | ReflectiveOperationException | LinkageError | NullPointerException e) {
      return List.of();
    }
  }

  @Override
  public void close() throws IOException {
    IOException failed = null;
    synchronized (openJars) {
      closed = true;
      for (JarFile f : openJars.values()) {
        try {
          f.close();
        } catch (IOException e) {
          failed = e;
        }
      }
      openJars.clear();
    }
    super.close();
    if (failed != null) {
      throw failed;
    }
  }

  @Override
  public URL getResource(String name) {
    if (isSharedResource(name)) {
      return host.getResource(name);
    }
    URL own = findResource(name);
    return own != null ? own : getParent().getResource(name);
  }

  @Override
  public Enumeration<URL> getResources(String name) throws IOException {
    if (isSharedResource(name)) {
      return host.getResources(name);
    }
    List<URL> own = Collections.list(findResources(name));
    List<URL> jdk = Collections.list(getParent().getResources(name));
    return Collections.enumeration(Stream.concat(own.stream(), jdk.stream()).toList());
  }

  private static URL[] urls(List<Path> jars) {
    return jars.stream()
        .map(
            p -> {
              try {
                return p.toUri().toURL();
              } catch (MalformedURLException e) {
                throw new UncheckedIOException(e);
              }
            })
        .toArray(URL[]::new);
  }
}
