package dev.phrony.worker.harness;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;

/**
 * The worker's call pipeline as the harness carries it: the call module and the Jackson and schema
 * validator it needs, as jars inside the harness's own jar (under {@value #JARS}), so that no
 * Jackson a plugin's test class path holds replaces them. They are loaded once per JVM, in a loader
 * that sees the JDK, the plugin API, SLF4J and this package's types from the test's loader, and its
 * own jars for everything else, as the worker's host loader sees its own classpath.
 */
final class IsolatedPipeline {
  /** Where the pipeline's jars are inside the harness's jar (or classes folder). */
  static final String JARS = "META-INF/phrony-harness/pipeline/";

  private static final String SIDE = "dev.phrony.worker.harness.pipeline.Pipeline";

  private IsolatedPipeline() {}

  private static final class Once {
    static final HarnessPipeline PIPELINE = open();
  }

  /** The pipeline of this JVM, loaded on first use. */
  static HarnessPipeline get() {
    return Once.PIPELINE;
  }

  private static HarnessPipeline open() {
    Path home = TestClasspath.codeSource(HandlerHarness.class);
    List<URL> urls = new ArrayList<>();
    try {
      for (Path jar : Files.isDirectory(home) ? listed(home.resolve(JARS)) : extracted(home)) {
        urls.add(url(jar));
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the harness's call pipeline from " + home, e);
    }
    if (urls.isEmpty()) {
      throw new IllegalStateException(
          "the harness at "
              + home
              + " carries no call pipeline ("
              + JARS
              + "*.jar): build phrony-plugin-testing with `package` (its jar holds them)");
    }
    urls.add(url(home)); // this side's own classes (dev.phrony.worker.harness.pipeline)
    ClassLoader loader =
        new URLClassLoader(
            "phrony-harness-pipeline",
            urls.toArray(URL[]::new),
            new SharedWithTest(HandlerHarness.class.getClassLoader()));
    Thread current = Thread.currentThread();
    ClassLoader previous = current.getContextClassLoader();
    current.setContextClassLoader(loader); // Jackson starts up as in the worker's own loader
    try {
      return (HarnessPipeline) loader.loadClass(SIDE).getConstructor().newInstance();
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot start the harness's call pipeline from " + home, e);
    } finally {
      current.setContextClassLoader(previous);
    }
  }

  private static List<Path> listed(Path dir) throws IOException {
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(f -> f.getFileName().toString().endsWith(".jar")).sorted().toList();
    }
  }

  /** The pipeline's jars copied out of the harness's jar, into a folder removed on exit. */
  private static List<Path> extracted(Path harnessJar) throws IOException {
    Path dir = Files.createTempDirectory("phrony-harness-");
    dir.toFile().deleteOnExit(); // after the files in it, which are registered later
    List<Path> jars = new ArrayList<>();
    try (JarFile jar = new JarFile(harnessJar.toFile())) {
      for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
        JarEntry entry = e.nextElement();
        String name = entry.getName();
        if (name.startsWith(JARS)
            && name.endsWith(".jar")
            && name.indexOf('/', JARS.length()) < 0) {
          Path out = dir.resolve(name.substring(JARS.length()));
          try (InputStream in = jar.getInputStream(entry)) {
            Files.copy(in, out);
          }
          out.toFile().deleteOnExit();
          jars.add(out);
        }
      }
    }
    return jars.stream().sorted().toList();
  }

  private static URL url(Path p) {
    try {
      return p.toUri().toURL();
    } catch (MalformedURLException e) {
      throw new IllegalArgumentException(p.toString(), e);
    }
  }

  /**
   * The parent of the pipeline's loader: the JDK, and from the test's loader the classes both sides
   * must share (the plugin API, SLF4J, so that the pipeline logs where the test does, and this
   * package's types, which cross between the two); nothing else.
   */
  private static final class SharedWithTest extends ClassLoader {
    private static final List<String> SHARED = List.of("dev/phrony/worker/api/", "org/slf4j/");
    private static final String HARNESS = "dev/phrony/worker/harness/";

    static {
      ClassLoader.registerAsParallelCapable();
    }

    private final ClassLoader test;

    SharedWithTest(ClassLoader test) {
      super("phrony-harness-shared", ClassLoader.getPlatformClassLoader());
      this.test = test;
    }

    /** For a class or a resource, as a path ({@code org/slf4j/Logger.class}). */
    private static boolean shared(String path) {
      return SHARED.stream().anyMatch(path::startsWith)
          || path.startsWith(HARNESS) && path.indexOf('/', HARNESS.length()) < 0;
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      return shared(name.replace('.', '/')) ? test.loadClass(name) : super.loadClass(name, resolve);
    }

    @Override
    public URL getResource(String name) {
      return shared(name) ? test.getResource(name) : super.getResource(name);
    }

    @Override
    public Enumeration<URL> getResources(String name) throws IOException {
      return shared(name) ? test.getResources(name) : super.getResources(name);
    }
  }
}
