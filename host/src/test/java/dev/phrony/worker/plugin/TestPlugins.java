package dev.phrony.worker.plugin;

import dev.phrony.worker.api.ToolHandler;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

/**
 * Builds real plugin jars for tests: compiles Java sources with {@code javax.tools} against the
 * plugin API (and whatever else a test adds), then packages the classes, a services file and any
 * extra entries with {@code java.util.jar}.
 *
 * <pre>{@code
 * TestPlugins plugins = new TestPlugins(tempDir.resolve("build"));
 * plugins.jar()
 *     .handler("demo.Hello", TestPlugins.descriptor("hello", "1.0.0", "read_only"))
 *     .writeTo(pluginsDir.resolve("hello.jar"));
 * }</pre>
 */
public final class TestPlugins {
  private final Path workDir;
  private int builds;

  /**
   * @param workDir scratch space for sources and classes (not the plugins directory)
   */
  public TestPlugins(Path workDir) {
    this.workDir = workDir;
  }

  /** Starts a jar. */
  public JarBuilder jar() {
    return new JarBuilder();
  }

  /**
   * A jar whose one handler, {@code pkg.Handler}, serves {@code tool@1} (read only, {@code max}
   * calls at a time) and answers every call with {@code answer}.
   */
  public JarBuilder answering(String pkg, String tool, int max, String answer) {
    return jar()
        .handler(
            pkg + ".Handler",
            descriptor(tool, "1", "read_only")
                .replace(".build()", ".maxConcurrency(" + max + ").build()"),
            "",
            "return ToolResult.text(\"" + answer + "\");");
  }

  /** A jar of random bytes: a corrupt plugin. */
  public static Path corruptJar(Path file) throws IOException {
    byte[] junk = new byte[512];
    new Random(42).nextBytes(junk);
    Files.createDirectories(file.toAbsolutePath().getParent());
    return Files.write(file, junk);
  }

  /** Source expression of a descriptor, e.g. {@code descriptor("echo", "1.0.0", "read_only")}. */
  public static String descriptor(String tool, String version, String sideEffectClass) {
    return "ToolDescriptor.builder(\""
        + tool
        + "\").version(\""
        + version
        + "\").sideEffectClass(\""
        + sideEffectClass
        + "\").build()";
  }

  /**
   * Source of a handler class whose {@code descriptor()} returns {@code descriptorExpression} and
   * whose {@code handle} runs {@code handleBody} ({@code dev.phrony.worker.api.*} is imported).
   * {@code members} are added to the class as they are (fields, constructors, static blocks).
   */
  public static String handlerSource(
      String className, String descriptorExpression, String handleBody, String members) {
    int dot = className.lastIndexOf('.');
    return "package "
        + className.substring(0, dot)
        + ";\n"
        + "import dev.phrony.worker.api.*;\n"
        + "public final class "
        + className.substring(dot + 1)
        + " implements ToolHandler {\n"
        + members
        + "\n"
        + "  @Override public ToolDescriptor descriptor() { return "
        + descriptorExpression
        + "; }\n"
        + "  @Override public ToolResult handle(ToolCall call) throws Exception { "
        + handleBody
        + " }\n"
        + "}\n";
  }

  /** Where the plugin API classes are (a jar or a classes folder). */
  public static Path apiClasspath() {
    return codeSource(ToolHandler.class);
  }

  /** Where {@code c} was loaded from. */
  public static Path codeSource(Class<?> c) {
    try {
      return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The class file bytes of {@code c}, to bundle a copy of a class in a jar. */
  public static byte[] classBytes(Class<?> c) {
    try (InputStream in = c.getResourceAsStream(c.getSimpleName() + ".class")) {
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Builds one jar. */
  public final class JarBuilder {
    private final Map<String, String> sources = new LinkedHashMap<>();
    private final List<String> services = new ArrayList<>();
    private final Map<String, byte[]> entries = new LinkedHashMap<>();
    private final List<Path> classpath = new ArrayList<>(List.of(apiClasspath()));
    private final Set<String> omitted = new HashSet<>();

    private JarBuilder() {}

    /** Adds a source file for {@code className} (fully qualified). */
    public JarBuilder source(String className, String code) {
      sources.put(className, code);
      return this;
    }

    /** Adds a handler with a trivial {@code handle} and lists it in the services file. */
    public JarBuilder handler(String className, String descriptorExpression) {
      return handler(
          className, descriptorExpression, "", "return ToolResult.text(\"" + className + "\");");
    }

    /** Adds a handler (see {@link TestPlugins#handlerSource}) and lists it as a service. */
    public JarBuilder handler(
        String className, String descriptorExpression, String members, String handleBody) {
      source(className, handlerSource(className, descriptorExpression, handleBody, members));
      return service(className);
    }

    /** Adds a line to {@code META-INF/services/dev.phrony.worker.api.ToolHandler}. */
    public JarBuilder service(String className) {
      services.add(className);
      return this;
    }

    /** Adds an entry with exactly these bytes. */
    public JarBuilder entry(String name, byte[] content) {
      entries.put(name, content);
      return this;
    }

    /** Compiles against these jars or class folders too (not bundled). */
    public JarBuilder classpath(Path... paths) {
      classpath.addAll(List.of(paths));
      return this;
    }

    /** Compiles {@code className} but leaves it out of the jar (to provoke linkage errors). */
    public JarBuilder omit(String className) {
      omitted.add(className.replace('.', '/') + ".class");
      return this;
    }

    /** Compiles and writes the jar (creating parent folders); returns {@code jar}. */
    /**
     * Puts the jar at {@code jar} as a deployment does: written beside (in this builder's scratch
     * space), then moved over whatever is there in one step, so a watcher never sees half a jar.
     */
    public Path deployTo(Path jar) throws IOException {
      Path staged = writeTo(workDir.resolve("staging").resolve(jar.getFileName().toString()));
      return Files.move(
          staged, jar, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    public Path writeTo(Path jar) throws IOException {
      Path classes = compile();
      Files.createDirectories(jar.toAbsolutePath().getParent());
      Manifest manifest = new Manifest();
      manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
      try (OutputStream file = Files.newOutputStream(jar);
          JarOutputStream out = new JarOutputStream(file, manifest)) {
        List<Path> classFiles;
        try (Stream<Path> walk = Files.walk(classes)) {
          classFiles = walk.filter(Files::isRegularFile).sorted().toList();
        }
        for (Path f : classFiles) {
          String name = classes.relativize(f).toString().replace('\\', '/');
          if (!omitted.contains(name)) {
            put(out, name, Files.readAllBytes(f));
          }
        }
        if (!services.isEmpty()) {
          put(
              out,
              PluginLoader.SERVICES_FILE,
              (String.join("\n", services) + "\n").getBytes(StandardCharsets.UTF_8));
        }
        for (var e : entries.entrySet()) {
          put(out, e.getKey(), e.getValue());
        }
      }
      return jar;
    }

    private static void put(JarOutputStream out, String name, byte[] bytes) throws IOException {
      out.putNextEntry(new JarEntry(name));
      out.write(bytes);
      out.closeEntry();
    }

    private Path compile() throws IOException {
      Path root = workDir.resolve("build-" + (++builds));
      Path src = root.resolve("src");
      Path classes = Files.createDirectories(root.resolve("classes"));
      if (sources.isEmpty()) {
        return classes;
      }
      List<Path> files = new ArrayList<>();
      for (var s : sources.entrySet()) {
        Path file = src.resolve(s.getKey().replace('.', '/') + ".java");
        Files.createDirectories(file.getParent());
        files.add(Files.writeString(file, s.getValue()));
      }
      JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
      DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
      try (StandardJavaFileManager fm =
          javac.getStandardFileManager(diagnostics, null, StandardCharsets.UTF_8)) {
        List<String> options =
            List.of(
                "--release",
                "21",
                "-proc:none",
                "-d",
                classes.toString(),
                "-classpath",
                classpath.stream()
                    .map(Path::toString)
                    .collect(Collectors.joining(java.io.File.pathSeparator)));
        boolean ok =
            javac
                .getTask(
                    null, fm, diagnostics, options, null, fm.getJavaFileObjectsFromPaths(files))
                .call();
        if (!ok) {
          throw new IllegalArgumentException(
              "test plugin does not compile:\n"
                  + diagnostics.getDiagnostics().stream()
                      .map(Object::toString)
                      .collect(Collectors.joining("\n")));
        }
      }
      return classes;
    }
  }
}
