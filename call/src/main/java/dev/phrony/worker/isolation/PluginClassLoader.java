package dev.phrony.worker.isolation;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
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

  private final ClassLoader host;

  /**
   * @param name a name for stack traces and logs (the plugin's file name)
   * @param jars the plugin's jars, in lookup order
   * @param host where the shared packages come from (the host's own loader)
   */
  public PluginClassLoader(String name, List<Path> jars, ClassLoader host) {
    super(name, urls(jars), ClassLoader.getPlatformClassLoader());
    this.host = host;
  }

  /** True for classes every plugin shares with the host. */
  static boolean isShared(String className) {
    return SHARED_PACKAGES.stream().anyMatch(className::startsWith);
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
