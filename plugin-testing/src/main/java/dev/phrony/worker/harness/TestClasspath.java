package dev.phrony.worker.harness;

import java.io.File;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The class path entries a test's classes come from, in lookup order: what the harness loads a
 * handler over, as the worker loads a plugin over its own jars.
 */
final class TestClasspath {
  private TestClasspath() {}

  /**
   * The entries of {@code loader} and its parents: a {@link URLClassLoader}'s URLs, and the
   * application class loader's {@code java.class.path} (which Maven's surefire, Gradle and IDEs set
   * to the test class path). Loaders of other kinds add nothing.
   */
  static List<Path> of(ClassLoader loader) {
    Set<Path> entries = new LinkedHashSet<>();
    for (ClassLoader l = loader; l != null; l = l.getParent()) {
      if (l instanceof URLClassLoader u) {
        for (URL url : u.getURLs()) {
          if ("file".equals(url.getProtocol())) {
            entries.add(path(url));
          }
        }
      } else if (l == ClassLoader.getSystemClassLoader()) {
        for (String e : System.getProperty("java.class.path", "").split(File.pathSeparator)) {
          if (!e.isEmpty()) {
            entries.add(Path.of(e).toAbsolutePath());
          }
        }
      }
    }
    return List.copyOf(entries);
  }

  /** {@code c}'s own entry first, then those of its loader. */
  static List<Path> of(Class<?> c) {
    Set<Path> entries = new LinkedHashSet<>();
    entries.add(codeSource(c));
    entries.addAll(of(c.getClassLoader()));
    return List.copyOf(entries);
  }

  /** The jar or classes folder {@code c} was loaded from. */
  static Path codeSource(Class<?> c) {
    CodeSource source = c.getProtectionDomain().getCodeSource();
    if (source == null || source.getLocation() == null) {
      throw new IllegalArgumentException(c.getName() + " was not loaded from a jar or a folder");
    }
    return path(source.getLocation());
  }

  private static Path path(URL url) {
    try {
      return Path.of(url.toURI()).toAbsolutePath();
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("not a file: " + url, e);
    }
  }
}
