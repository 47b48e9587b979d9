package dev.phrony.worker.plugin;

import static dev.phrony.worker.plugin.TestPlugins.descriptor;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Links in a plugins folder: followed to a jar or folder elsewhere (a Kubernetes ConfigMap's files
 * are links), and reported, not loaded, when they cannot be a plugin: a link back to the folder
 * itself, or a link that leads nowhere.
 */
class PluginLinksTest {
  @TempDir Path tmp;

  private Path dir;
  private TestPlugins build;

  @BeforeEach
  void folder() throws IOException {
    dir = Files.createDirectories(tmp.resolve("plugins"));
    build = new TestPlugins(tmp.resolve("build"));
  }

  private Path plugin(Path jar, String tool) throws IOException {
    return build
        .jar()
        .handler(
            tool.replace('-', '_') + ".Handler",
            descriptor(tool, "1.0.0", "read_only"),
            "",
            "return ToolResult.text(\"ok\");")
        .writeTo(jar);
  }

  private LoadResult load() {
    LoadResult r = new PluginLoader().load(dir);
    LoadResult.close(r.unusedBy(LoadResult.empty()));
    return r;
  }

  @Test
  void a_link_to_the_plugins_folder_itself_is_reported_and_every_jar_still_loads_once()
      throws IOException {
    plugin(dir.resolve("a.jar"), "a");
    plugin(dir.resolve("b.jar"), "b");
    Files.createSymbolicLink(dir.resolve("self"), Path.of("."));
    Files.createSymbolicLink(dir.resolve("up"), Path.of(".."));

    LoadResult r = load();

    assertThat(r.catalog().entries())
        .extracting(HandlerCatalog.Entry::key)
        .containsExactly("a@1.0.0", "b@1.0.0");
    assertThat(r.problems())
        .extracting(LoadProblem::plugin)
        .containsExactly(dir.resolve("self").toString(), dir.resolve("up").toString());
    assertThat(r.problems().getFirst().reason())
        .isEqualTo(
            "a link to the plugins directory itself ("
                + dir.toRealPath()
                + "): it would load every plugin twice; remove the link");
    assertThat(r.problems().get(1).reason())
        .startsWith("a link to a folder that holds the plugins directory (" + tmp.toRealPath());
  }

  @Test
  void a_jar_link_that_leads_nowhere_is_reported_and_the_rest_loads() throws IOException {
    plugin(dir.resolve("good.jar"), "good");
    Files.createSymbolicLink(dir.resolve("loop.jar"), Path.of("loop.jar"));
    Files.createSymbolicLink(dir.resolve("ping.jar"), Path.of("pong.jar"));
    Files.createSymbolicLink(dir.resolve("pong.jar"), Path.of("ping.jar"));
    Files.createSymbolicLink(dir.resolve("gone.jar"), tmp.resolve("build/removed.jar"));

    LoadResult r = load();

    assertThat(r.catalog().entries())
        .extracting(HandlerCatalog.Entry::key)
        .containsExactly("good@1.0.0");
    assertThat(r.problems())
        .extracting(LoadProblem::plugin)
        .containsExactly(
            dir.resolve("gone.jar").toString(),
            dir.resolve("loop.jar").toString(),
            dir.resolve("ping.jar").toString(),
            dir.resolve("pong.jar").toString());
    assertThat(r.problems().getFirst().reason())
        .isEqualTo(
            "gone.jar is a link to "
                + tmp.resolve("build/removed.jar")
                + ", which does not exist: point it at the plugin's jar, or remove it");
    assertThat(r.problems().get(1).reason())
        .isEqualTo(
            "loop.jar is a link in a loop of links, which never reaches a file: point it at the"
                + " plugin's jar, or remove it");
  }

  @Test
  void links_to_a_jar_and_a_folder_elsewhere_are_followed() throws IOException {
    Path elsewhere = Files.createDirectories(tmp.resolve("elsewhere"));
    Files.createSymbolicLink(dir.resolve("a.jar"), plugin(elsewhere.resolve("a-1.jar"), "a"));
    plugin(elsewhere.resolve("f/f.jar"), "f");
    Files.createSymbolicLink(dir.resolve("f"), elsewhere.resolve("f"));

    LoadResult r = load();

    assertThat(r.problems()).isEmpty();
    assertThat(r.catalog().entries())
        .extracting(HandlerCatalog.Entry::key)
        .containsExactly("a@1.0.0", "f@1.0.0");
  }
}
