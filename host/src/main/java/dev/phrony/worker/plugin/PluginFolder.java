package dev.phrony.worker.plugin;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * The plugins directory as the loader reads it: one plugin per jar or folder in it, hidden names
 * passed over. Links are followed (a Kubernetes ConfigMap's files are links), unless one cannot be
 * a plugin, which is reported rather than loaded or silently passed over: a link that leads nowhere
 * (its target missing, or a loop of links), or one back to the plugins directory or a folder
 * holding it, which would load every plugin a second time (and refuse each key as offered twice).
 */
final class PluginFolder {
  private PluginFolder() {}

  /**
   * The plugin candidates in {@code dir}, sorted by name: folders, jars, and links that lead
   * nowhere named as a jar or folder would be (for {@link #linkProblem} to report).
   *
   * @throws PluginDirectoryException when {@code dir} is missing, not a directory or unreadable
   */
  static List<Path> candidates(Path dir) {
    if (!Files.exists(dir)) {
      throw new PluginDirectoryException(
          dir,
          "plugins directory "
              + shown(dir)
              + " does not "
              + "exist: create it and put plugin jars in it, or point --plugins at the folder that "
              + "holds them",
          null);
    }
    if (!Files.isDirectory(dir)) {
      throw new PluginDirectoryException(
          dir,
          "plugins directory "
              + shown(dir)
              + " is not a "
              + "directory: point --plugins at the folder that holds the plugin jars",
          null);
    }
    List<Path> out = new ArrayList<>();
    try (DirectoryStream<Path> children = Files.newDirectoryStream(dir)) {
      for (Path child : children) {
        String name = child.getFileName().toString();
        if (name.startsWith(".")) {
          continue;
        }
        if (Files.isDirectory(child)
            || (isJar(name) && Files.isRegularFile(child))
            || (Files.isSymbolicLink(child)
                && !Files.exists(child)
                && (isJar(name) || !name.contains(".")))) {
          out.add(child);
        }
      }
    } catch (IOException e) {
      throw new PluginDirectoryException(
          dir,
          "cannot read plugins directory "
              + shown(dir)
              + " ("
              + e
              + "): check that it exists and is readable by this user",
          e);
    }
    out.sort(Comparator.comparing(p -> p.getFileName().toString()));
    return out;
  }

  /** Why {@code plugin}, one of the {@link #candidates}, cannot be loaded; empty when it can. */
  static Optional<String> linkProblem(Path plugin) {
    if (!Files.isSymbolicLink(plugin)) {
      return Optional.empty();
    }
    String name = plugin.getFileName().toString();
    String fix = "point it at the plugin's " + (isJar(name) ? "jar" : "folder") + ", or remove it";
    try {
      Set<Path> seen = new HashSet<>();
      Path at = plugin;
      while (Files.isSymbolicLink(at)) {
        if (!seen.add(at.toAbsolutePath().normalize())) {
          return Optional.of(
              name + " is a link in a loop of links, which never reaches a file: " + fix);
        }
        at = at.resolveSibling(Files.readSymbolicLink(at));
      }
      if (!Files.exists(at)) {
        return Optional.of(
            name
                + " is a link to "
                + Files.readSymbolicLink(plugin)
                + ", which does not exist: "
                + fix);
      }
      if (!Files.isDirectory(at)) {
        return Optional.empty();
      }
      Path real = at.toRealPath();
      Path dir = plugin.toAbsolutePath().getParent().toRealPath();
      if (real.equals(dir)) {
        return Optional.of(
            "a link to the plugins directory itself ("
                + dir
                + "): it would load every plugin twice; remove the link");
      }
      if (dir.startsWith(real)) {
        return Optional.of(
            "a link to a folder that holds the plugins directory ("
                + real
                + "): it would load the plugins folder inside itself; remove the link");
      }
      return Optional.empty();
    } catch (IOException e) {
      return Optional.of(name + " is a link that cannot be followed (" + e + "): " + fix);
    }
  }

  static boolean isJar(String name) {
    return name.toLowerCase(Locale.ROOT).endsWith(".jar");
  }

  private static String shown(Path dir) {
    return dir.isAbsolute() ? dir.toString() : dir + " (" + dir.toAbsolutePath().normalize() + ")";
  }
}
