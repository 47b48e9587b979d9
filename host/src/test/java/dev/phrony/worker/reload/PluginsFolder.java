package dev.phrony.worker.reload;

import dev.phrony.worker.plugin.TestPlugins;
import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;

/** A plugins folder of real jars, changed as a deployment changes it. */
final class PluginsFolder {
  final Path dir;
  private final TestPlugins build;

  PluginsFolder(Path tmp) throws IOException {
    this.dir = Files.createDirectories(tmp.resolve("plugins"));
    this.build = new TestPlugins(tmp.resolve("build"));
  }

  /** A plugin whose one tool {@code tool@1} answers {@code answer}, {@code max} at a time. */
  TestPlugins.JarBuilder plugin(String pkg, String tool, int max, String answer) {
    return build.answering(pkg, tool, max, answer);
  }

  /** As a deployment does it (see {@link TestPlugins.JarBuilder#deployTo}). */
  void deploy(String jarName, TestPlugins.JarBuilder jar) throws IOException {
    jar.deployTo(dir.resolve(jarName));
  }

  void corrupt(String jarName) throws IOException {
    TestPlugins.corruptJar(dir.resolve(jarName));
  }

  /** True when {@code loader} was closed: a closed URLClassLoader finds no resource any more. */
  static boolean closed(ClassLoader loader) {
    URL found = ((URLClassLoader) loader).findResource("META-INF/MANIFEST.MF");
    return found == null;
  }
}
