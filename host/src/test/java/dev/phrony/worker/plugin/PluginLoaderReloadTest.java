package dev.phrony.worker.plugin;

import static dev.phrony.worker.plugin.TestPlugins.descriptor;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.isolation.PluginClassLoader;
import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link PluginLoader#reload}: unchanged plugins keep their handlers and classloader, everything
 * else is loaded fresh, and the classloaders left behind are named for closing. Real jars on disk.
 */
class PluginLoaderReloadTest {

  @TempDir Path tmp;
  Path dir;
  TestPlugins build;
  final PluginLoader loader = new PluginLoader();

  @BeforeEach
  void setUp() throws IOException {
    dir = Files.createDirectories(tmp.resolve("plugins"));
    build = new TestPlugins(tmp.resolve("build"));
  }

  /** A jar serving {@code tool@1} whose calls answer {@code answer}. */
  private Path plugin(String name, String tool, String answer) throws IOException {
    return build
        .jar()
        .handler(
            name + ".Handler",
            descriptor(tool, "1", "read_only"),
            "",
            "return ToolResult.text(\"" + answer + "\");")
        .writeTo(dir.resolve(name + ".jar"));
  }

  /** Swaps a jar in as a deployment would: written beside, then moved over the old one. */
  private void replace(String jarName, TestPlugins.JarBuilder jar) throws IOException {
    jar.deployTo(dir.resolve(jarName));
  }

  private static HandlerCatalog.Entry entry(LoadResult r, String key) {
    return r.catalog().entries().stream()
        .filter(e -> e.key().equals(key))
        .findFirst()
        .orElseThrow(() -> new AssertionError(key + " not served"));
  }

  private static ToolResult answer(HandlerCatalog.Entry e) throws Exception {
    return e.handler().handle(FakeCall.withArgs("{}"));
  }

  @Test
  void unchanged_folder_keeps_every_entry_and_classloader() throws IOException {
    plugin("a", "a", "A");
    plugin("b", "b", "B");
    LoadResult first = loader.load(dir);

    LoadResult second = loader.reload(dir, first);

    assertThat(second.problems()).isEmpty();
    assertThat(second.catalog().entries()).hasSize(2);
    for (String key : List.of("a@1", "b@1")) {
      assertThat(entry(second, key)).isSameAs(entry(first, key));
      assertThat(entry(second, key).handler()).isSameAs(entry(first, key).handler());
      assertThat(entry(second, key).classLoader()).isSameAs(entry(first, key).classLoader());
    }
    assertThat(second.classLoaders())
        .containsExactlyInAnyOrderElementsOf(first.classLoaders())
        .hasSize(2);
    assertThat(first.unusedBy(second)).isEmpty();
    assertThat(second.plugins()).isEqualTo(first.plugins());
    assertThat(second.imageDigest()).isEqualTo(first.imageDigest());
    assertThat(CatalogChange.between(first.catalog(), second.catalog()).none()).isTrue();
  }

  @Test
  void replaced_jar_gets_a_new_classloader_and_handler_while_the_untouched_plugin_keeps_its_own()
      throws Exception {
    plugin("a", "a", "A");
    plugin("b", "b", "B1");
    LoadResult first = loader.load(dir);
    HandlerCatalog.Entry a1 = entry(first, "a@1");
    HandlerCatalog.Entry b1 = entry(first, "b@1");

    replace(
        "b.jar",
        build
            .jar()
            .handler(
                "b.Handler",
                descriptor("b", "1", "read_only"),
                "",
                "return ToolResult.text(\"B2\");"));
    LoadResult second = loader.reload(dir, first);

    assertThat(second.problems()).isEmpty();
    assertThat(entry(second, "a@1")).isSameAs(a1);
    HandlerCatalog.Entry b2 = entry(second, "b@1");
    assertThat(b2.handler()).isNotSameAs(b1.handler());
    assertThat(b2.classLoader())
        .isInstanceOf(PluginClassLoader.class)
        .isNotSameAs(b1.classLoader())
        .isSameAs(b2.handler().getClass().getClassLoader());
    assertThat(answer(b2)).isEqualTo(ToolResult.text("B2"));
    assertThat(answer(b1)).isEqualTo(ToolResult.text("B1")); // in-flight code intact
    assertThat(first.unusedBy(second)).containsExactly(b1.classLoader());
    assertThat(second.classLoaders()).containsExactlyInAnyOrder(a1.classLoader(), b2.classLoader());
    assertThat(second.imageDigest()).isNotEqualTo(first.imageDigest());
  }

  @Test
  void new_jar_is_loaded() throws Exception {
    plugin("a", "a", "A");
    LoadResult first = loader.load(dir);

    plugin("c", "c", "C");
    LoadResult second = loader.reload(dir, first);

    assertThat(second.catalog().entries())
        .extracting(HandlerCatalog.Entry::key)
        .containsExactly("a@1", "c@1");
    assertThat(entry(second, "a@1")).isSameAs(entry(first, "a@1"));
    assertThat(answer(entry(second, "c@1"))).isEqualTo(ToolResult.text("C"));
    assertThat(first.unusedBy(second)).isEmpty();
    assertThat(second.loaded())
        .extracting(p -> p.source().path())
        .containsExactly(dir.resolve("a.jar"), dir.resolve("c.jar"));
  }

  @Test
  void removed_jar_leaves_its_classloader_unused_and_closing_it_never_throws() throws Exception {
    plugin("a", "a", "A");
    plugin("b", "b", "B");
    LoadResult first = loader.load(dir);
    ClassLoader gone = entry(first, "b@1").classLoader();

    Files.delete(dir.resolve("b.jar"));
    LoadResult second = loader.reload(dir, first);

    assertThat(second.catalog().entries())
        .extracting(HandlerCatalog.Entry::key)
        .containsExactly("a@1");
    assertThat(first.unusedBy(second)).containsExactly(gone);
    assertThat(second.classLoaders()).doesNotContain(gone);

    // Closing: the kept handler still runs; the closed loader loads nothing new.
    LoadResult.close(first.unusedBy(second));
    assertThat(answer(entry(second, "a@1"))).isEqualTo(ToolResult.text("A"));
    assertThatThrownBy(() -> gone.loadClass("b.NotYetLoaded"))
        .isInstanceOf(ClassNotFoundException.class);
    assertThat(gone.getResource(PluginLoader.SERVICES_FILE)).isNull();
  }

  @Test
  void close_logs_failures_and_goes_on() {
    URLClassLoader failing =
        new URLClassLoader(new URL[0]) {
          @Override
          public void close() throws IOException {
            throw new IOException("disk gone");
          }
        };
    URLClassLoader fine = new URLClassLoader(new URL[0]);
    ClassLoader notCloseable = ClassLoader.getPlatformClassLoader();

    assertThatCode(() -> LoadResult.close(List.of(failing, notCloseable, fine)))
        .doesNotThrowAnyException();
    assertThatThrownBy(() -> fine.loadClass("x.Y")).isInstanceOf(ClassNotFoundException.class);
  }

  @Test
  void key_refused_as_a_duplicate_is_served_by_the_kept_plugin_once_the_other_offer_is_gone()
      throws IOException {
    build
        .jar()
        .handler("dupa.Handler", descriptor("dup", "1", "read_only"))
        .handler("dupa.Only", descriptor("dup-a.only", "1", "read_only"))
        .writeTo(dir.resolve("dup-a.jar"));
    build
        .jar()
        .handler("dupb.Handler", descriptor("dup", "1", "read_only"))
        .writeTo(dir.resolve("dup-b.jar"));
    LoadResult first = loader.load(dir);
    assertThat(first.catalog().find("dup", "1")).isEmpty();
    assertThat(first.problems())
        .extracting(LoadProblem::plugin)
        .containsExactly(dir.resolve("dup-a.jar").toString(), dir.resolve("dup-b.jar").toString());
    // Both keep their classloaders: their entries are kept for a later reload.
    assertThat(first.classLoaders()).hasSize(2);
    HandlerCatalog.Entry refused =
        first.loaded().getFirst().entries().stream()
            .filter(e -> e.key().equals("dup@1"))
            .findFirst()
            .orElseThrow();

    // Unchanged: still refused, with the same problems.
    LoadResult again = loader.reload(dir, first);
    assertThat(again.catalog().find("dup", "1")).isEmpty();
    assertThat(again.problems()).isEqualTo(first.problems());
    assertThat(first.unusedBy(again)).isEmpty();

    Files.delete(dir.resolve("dup-b.jar"));
    LoadResult second = loader.reload(dir, again);

    assertThat(second.problems()).isEmpty();
    assertThat(second.catalog().find("dup", "1")).containsSame(refused);
    assertThat(entry(second, "dup-a.only@1")).isSameAs(entry(first, "dup-a.only@1"));
    assertThat(again.unusedBy(second)).containsExactly(first.loaded().get(1).classLoader());
  }

  @Test
  void corrupt_jar_on_reload_is_reported_as_load_reports_it_and_the_rest_is_served()
      throws IOException {
    plugin("a", "a", "A");
    plugin("b", "b", "B");
    LoadResult first = loader.load(dir);
    ClassLoader bLoader = entry(first, "b@1").classLoader();

    Path corrupt = TestPlugins.corruptJar(tmp.resolve("staging/b.jar"));
    Files.move(corrupt, dir.resolve("b.jar"), StandardCopyOption.REPLACE_EXISTING);
    LoadResult second = loader.reload(dir, first);

    assertThat(second.problems())
        .isEqualTo(new PluginLoader().load(dir).problems())
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.plugin()).isEqualTo(dir.resolve("b.jar").toString());
              assertThat(p.reason()).startsWith("b.jar is not a valid jar (");
            });
    assertThat(second.catalog().entries())
        .extracting(HandlerCatalog.Entry::key)
        .containsExactly("a@1");
    assertThat(entry(second, "a@1")).isSameAs(entry(first, "a@1"));
    assertThat(second.plugins())
        .extracting(PluginSource::path)
        .containsExactly(dir.resolve("a.jar"), dir.resolve("b.jar"));
    assertThat(second.loaded())
        .extracting(p -> p.source().path())
        .containsExactly(dir.resolve("a.jar"));
    assertThat(first.unusedBy(second)).containsExactly(bLoader);
  }

  @Test
  void plugin_with_problems_before_is_loaded_again_and_once_fixed_is_served() throws Exception {
    build
        .jar()
        .handler(
            "ct.Throws",
            descriptor("ct", "1", "read_only"),
            "public Throws() { throw new IllegalStateException(\"no config\"); }",
            "return null;")
        .writeTo(dir.resolve("ct.jar"));
    LoadResult first = loader.load(dir);
    assertThat(first.problems())
        .singleElement()
        .satisfies(p -> assertThat(p.reason()).contains("no config"));
    assertThat(first.loaded()).isEmpty();
    assertThat(first.classLoaders()).isEmpty();

    LoadResult unchanged = loader.reload(dir, first);
    assertThat(unchanged.problems()).isEqualTo(first.problems());

    replace(
        "ct.jar",
        build
            .jar()
            .handler(
                "ct.Throws",
                descriptor("ct", "1", "read_only"),
                "",
                "return ToolResult.text(\"fixed\");"));
    LoadResult fixed = loader.reload(dir, unchanged);
    assertThat(fixed.problems()).isEmpty();
    assertThat(answer(entry(fixed, "ct@1"))).isEqualTo(ToolResult.text("fixed"));
  }

  @Test
  void folder_plugin_whose_jar_list_changes_is_loaded_fresh() throws IOException {
    Path depJar =
        build
            .jar()
            .source(
                "dep.Util",
                "package dep; public class Util { public static String hi() { "
                    + "return \"from lib\"; } }")
            .writeTo(tmp.resolve("dep.jar"));
    build
        .jar()
        .classpath(depJar)
        .handler(
            "folder.Handler",
            descriptor("folder", "1", "read_only"),
            "",
            "return ToolResult.text(dep.Util.hi());")
        .writeTo(dir.resolve("folder/folder.jar"));
    Files.copy(depJar, Files.createDirectories(dir.resolve("folder/lib")).resolve("dep.jar"));
    plugin("a", "a", "A");
    LoadResult first = loader.load(dir);
    LoadResult same = loader.reload(dir, first);
    assertThat(entry(same, "folder@1")).isSameAs(entry(first, "folder@1"));

    Files.copy(depJar, dir.resolve("folder/lib/extra.jar"));
    LoadResult second = loader.reload(dir, same);

    assertThat(second.problems()).isEmpty();
    assertThat(entry(second, "folder@1").classLoader())
        .isNotSameAs(entry(first, "folder@1").classLoader());
    assertThat(entry(second, "a@1")).isSameAs(entry(first, "a@1"));
    assertThat(same.unusedBy(second)).containsExactly(entry(first, "folder@1").classLoader());
  }

  @Test
  void load_records_what_loaded_cleanly_and_a_hand_made_result_owns_nothing() throws IOException {
    plugin("a", "a", "A");
    TestPlugins.corruptJar(dir.resolve("z.jar"));
    LoadResult r = loader.load(dir);

    assertThat(r.loaded())
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.source()).isEqualTo(r.plugins().getFirst());
              assertThat(p.entries()).containsExactlyElementsOf(r.catalog().entries());
              assertThat(p.classLoader()).isSameAs(entry(r, "a@1").classLoader());
            });
    LoadResult handMade = new LoadResult(r.catalog(), r.problems(), r.plugins());
    assertThat(handMade.loaded()).isEmpty();
    assertThat(handMade.classLoaders()).isEmpty();
    assertThat(LoadResult.empty().catalog().size()).isZero();
  }
}
