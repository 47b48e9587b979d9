package dev.phrony.worker.plugin;

import static dev.phrony.worker.plugin.TestPlugins.descriptor;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.isolation.PluginClassLoader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Loads a plugins directory holding good plugins and one broken plugin of every kind, all built
 * during the run: each broken one is reported with its path and an actionable reason, and the good
 * ones are served.
 */
class PluginLoaderTest {

  @TempDir static Path tmp;
  static Path dir;
  static LoadResult result;
  static ClassLoader tcclBefore;
  static ClassLoader tcclAfter;

  @BeforeAll
  static void buildCorpusAndLoad() throws IOException {
    dir = tmp.resolve("plugins");
    TestPlugins build = new TestPlugins(tmp.resolve("build"));

    // Good: a jar; a folder whose handler needs its lib/; a key with max concurrency 0.
    build
        .jar()
        .handler(
            "good.Handler",
            descriptor("good.tool", "1.0.0", "read_only"),
            "static ClassLoader seen; public Handler() { seen = "
                + "Thread.currentThread().getContextClassLoader(); }",
            "return ToolResult.text(String.valueOf(seen == Handler.class.getClassLoader()));")
        .writeTo(dir.resolve("good.jar"));
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
            "ToolDescriptor.builder(\"folder.tool\")"
                + ".sideEffectClass(SideEffectClass.IDEMPOTENT_WRITE).maxConcurrency(0).build()",
            "",
            "return ToolResult.text(dep.Util.hi());")
        .writeTo(dir.resolve("good-folder/good-folder.jar"));
    Files.copy(depJar, Files.createDirectories(dir.resolve("good-folder/lib")).resolve("dep.jar"));

    // Ignored: hidden entries and top-level files that are not jars.
    TestPlugins.corruptJar(dir.resolve(".hidden.jar"));
    Files.writeString(dir.resolve("notes.txt"), "not a plugin");

    // Broken: the jar or folder itself.
    TestPlugins.corruptJar(dir.resolve("corrupt.jar"));
    Files.createDirectories(dir.resolve("empty-folder"));
    Files.writeString(dir.resolve("empty-folder/README.txt"), "no jars here");
    build
        .jar()
        .source(
            "noprov.Handler",
            TestPlugins.handlerSource(
                "noprov.Handler", descriptor("noprov", "1", "read_only"), "return null;", ""))
        .writeTo(dir.resolve("no-providers.jar"));
    build
        .jar()
        .handler("bundles.Handler", descriptor("bundles", "1", "read_only"))
        .entry("dev/phrony/worker/api/ToolHandler.class", TestPlugins.classBytes(ToolHandler.class))
        .writeTo(dir.resolve("bundles-api.jar"));

    // Broken: loading or creating the handler class.
    build.jar().service("nope.Missing").writeTo(dir.resolve("missing-class.jar"));
    build
        .jar()
        .source("nothandler.Thing", "package nothandler; public class Thing {}")
        .service("nothandler.Thing")
        .writeTo(dir.resolve("not-a-handler.jar"));
    build
        .jar()
        .handler(
            "ctor.Throws",
            descriptor("ctor", "1", "read_only"),
            "public Throws() { throw new IllegalStateException(\"no config file\"); }",
            "return null;")
        .writeTo(dir.resolve("ctor-throws.jar"));
    build
        .jar()
        .handler(
            "stat.Throws",
            descriptor("stat", "1", "read_only"),
            "static final int X; static { if (true) throw new IllegalStateException(\"static "
                + "boom\"); X = 1; }",
            "return null;")
        .writeTo(dir.resolve("static-throws.jar"));
    build
        .jar()
        .source(
            "lk.Base",
            "package lk; public abstract class Base implements "
                + "dev.phrony.worker.api.ToolHandler {}")
        .source(
            "lk.Handler",
            "package lk; import dev.phrony.worker.api.*; public final class "
                + "Handler extends Base { public ToolDescriptor descriptor() { return "
                + descriptor("lk", "1", "read_only")
                + "; } public ToolResult handle(ToolCall c) { "
                + "return null; } }")
        .service("lk.Handler")
        .omit("lk.Base")
        .writeTo(dir.resolve("linkage.jar"));
    build
        .jar()
        .source(
            "lk2.Helper",
            "package lk2; public class Helper { public static int n() { " + "return 1; } }")
        .handler(
            "lk2.Handler",
            descriptor("lk2", "1", "read_only"),
            "public Handler() { Helper.n(); }",
            "return null;")
        .omit("lk2.Helper")
        .writeTo(dir.resolve("linkage-in-ctor.jar"));

    // Broken: the descriptor.
    build.jar().handler("d.Null", "null").writeTo(dir.resolve("null-descriptor.jar"));
    build
        .jar()
        .handler(
            "d.Throws",
            "ToolDescriptor.builder(System.getProperty(\"no.such\").trim())" + ".build()")
        .writeTo(dir.resolve("descriptor-throws.jar"));
    build
        .jar()
        .handler("d.Empty", descriptor("", "1", "read_only"))
        .writeTo(dir.resolve("empty-tool.jar"));
    build
        .jar()
        .handler("d.At", descriptor("pay@ments", "1", "read_only"))
        .writeTo(dir.resolve("tool-at.jar"));
    build
        .jar()
        .handler("d.Space", descriptor("pay ments", "1 0", "read_only"))
        .writeTo(dir.resolve("tool-space.jar"));
    build
        .jar()
        .handler(
            "d.Negative",
            "ToolDescriptor.builder(\"neg\").maxConcurrency(-2)"
                + ".sideEffectClass(SideEffectClass.READ_ONLY).build()")
        .writeTo(dir.resolve("negative-concurrency.jar"));
    build
        .jar()
        .handler("d.NoClass", "ToolDescriptor.builder(\"nocls\").build()")
        .writeTo(dir.resolve("null-side-effect.jar"));
    build
        .jar()
        .handler("d.Unknown", descriptor("unk", "1", "sometimes"))
        .writeTo(dir.resolve("unknown-side-effect.jar"));
    build
        .jar()
        .handler(
            "d.Schema",
            "ToolDescriptor.builder(\"schema\")"
                + ".sideEffectClass(SideEffectClass.READ_ONLY).inputSchema(\"{not json\").build()")
        .writeTo(dir.resolve("bad-schema.jar"));

    // One bad handler spoils its plugin, even beside a good one.
    build
        .jar()
        .handler("mixed.Good", descriptor("mixed.good", "1", "read_only"))
        .handler("mixed.Bad", descriptor("mixed bad", "1", "read_only"))
        .writeTo(dir.resolve("mixed.jar"));

    // Two plugins offer dup@1; dup-a's other key is still served.
    build
        .jar()
        .handler("dupa.Handler", descriptor("dup", "1", "read_only"))
        .handler("dupa.Only", descriptor("dup-a.only", "1", "read_only"))
        .writeTo(dir.resolve("dup-a.jar"));
    build
        .jar()
        .handler("dupb.Handler", descriptor("dup", "1", "idempotent_write"))
        .writeTo(dir.resolve("dup-b.jar"));

    tcclBefore = Thread.currentThread().getContextClassLoader();
    result = new PluginLoader().load(dir);
    tcclAfter = Thread.currentThread().getContextClassLoader();
  }

  private static String reasonOf(String plugin) {
    List<String> reasons =
        result.problems().stream()
            .filter(p -> p.plugin().equals(dir.resolve(plugin).toString()))
            .map(LoadProblem::reason)
            .toList();
    assertThat(reasons).as("problems of %s", plugin).hasSize(1);
    return reasons.getFirst();
  }

  @Test
  void serves_only_the_good_plugins() {
    assertThat(result.catalog().entries())
        .extracting(HandlerCatalog.Entry::key)
        .containsExactly("dup-a.only@1", "folder.tool@default", "good.tool@1.0.0");
  }

  @Test
  void reports_each_broken_plugin_by_path_and_nothing_else() {
    assertThat(result.problems().stream().map(LoadProblem::plugin).distinct())
        .containsExactlyInAnyOrder(
            Stream.of(
                    "bad-schema.jar",
                    "bundles-api.jar",
                    "corrupt.jar",
                    "ctor-throws.jar",
                    "descriptor-throws.jar",
                    "dup-a.jar",
                    "dup-b.jar",
                    "empty-folder",
                    "empty-tool.jar",
                    "linkage-in-ctor.jar",
                    "linkage.jar",
                    "missing-class.jar",
                    "mixed.jar",
                    "negative-concurrency.jar",
                    "no-providers.jar",
                    "not-a-handler.jar",
                    "null-descriptor.jar",
                    "null-side-effect.jar",
                    "static-throws.jar",
                    "tool-at.jar",
                    "tool-space.jar",
                    "unknown-side-effect.jar")
                .map(p -> dir.resolve(p).toString())
                .toArray(String[]::new));
    assertThat(result.problems()).extracting(LoadProblem::plugin).isSorted();
  }

  @Test
  void corrupt_jar() {
    assertThat(reasonOf("corrupt.jar"))
        .startsWith("corrupt.jar is not a valid jar (")
        .endsWith("): rebuild it, or remove it from the plugins directory");
  }

  @Test
  void folder_without_jars() {
    assertThat(reasonOf("empty-folder")).contains("holds no jars").contains("lib/");
  }

  @Test
  void no_providers() {
    assertThat(reasonOf("no-providers.jar"))
        .contains("no tool handlers found")
        .contains("META-INF/services/dev.phrony.worker.api.ToolHandler");
  }

  @Test
  void bundled_plugin_api() {
    assertThat(reasonOf("bundles-api.jar"))
        .contains("bundles its own copy of the plugin API")
        .contains("dev/phrony/worker/api/ToolHandler.class")
        .contains("<scope>provided</scope>");
  }

  @Test
  void services_file_names_a_missing_class() {
    assertThat(reasonOf("missing-class.jar"))
        .contains(": class nope.Missing not found")
        .contains("list only classes that are in the plugin");
  }

  @Test
  void services_file_names_a_class_that_is_no_handler() {
    assertThat(reasonOf("not-a-handler.jar"))
        .contains("nothandler.Thing not a subtype")
        .contains("must implement dev.phrony.worker.api.ToolHandler");
  }

  @Test
  void constructor_throws() {
    assertThat(reasonOf("ctor-throws.jar"))
        .contains("handler ctor.Throws could not be created")
        .contains("java.lang.IllegalStateException: no config file")
        .contains("constructor must not throw");
  }

  @Test
  void static_initializer_throws() {
    assertThat(reasonOf("static-throws.jar"))
        .contains("handler stat.Throws could not be created")
        .contains("java.lang.ExceptionInInitializerError")
        .contains("java.lang.IllegalStateException: static boom")
        .contains("static initialization");
  }

  @Test
  void linkage_error_when_loading_the_class() {
    assertThat(reasonOf("linkage.jar"))
        .contains("handler lk.Handler cannot be loaded")
        .contains("java.lang.NoClassDefFoundError: lk/Base")
        .contains("bundle every class and library");
  }

  @Test
  void linkage_error_in_the_constructor() {
    assertThat(reasonOf("linkage-in-ctor.jar"))
        .contains("handler lk2.Handler could not be created")
        .contains("java.lang.NoClassDefFoundError: lk2/Helper")
        .contains("bundle every class and library");
  }

  @Test
  void null_descriptor() {
    assertThat(reasonOf("null-descriptor.jar"))
        .contains("invalid descriptor from handler d.Null: descriptor() returned null");
  }

  @Test
  void descriptor_throws() {
    assertThat(reasonOf("descriptor-throws.jar"))
        .contains("descriptor() of handler d.Throws threw java.lang.NullPointerException");
  }

  @Test
  void empty_tool() {
    assertThat(reasonOf("empty-tool.jar"))
        .contains("invalid descriptor from handler d.Empty: tool is empty");
  }

  @Test
  void tool_with_at_sign() {
    assertThat(reasonOf("tool-at.jar"))
        .contains("tool 'pay@ments' contains '@'")
        .contains("use only letters, digits, '.', '_' and '-'");
  }

  @Test
  void tool_and_version_with_whitespace() {
    assertThat(reasonOf("tool-space.jar"))
        .contains("tool 'pay ments' contains whitespace")
        .contains("version '1 0' contains whitespace");
  }

  @Test
  void negative_max_concurrency() {
    assertThat(reasonOf("negative-concurrency.jar")).contains("max concurrency is -2");
  }

  @Test
  void missing_side_effect_class() {
    assertThat(reasonOf("null-side-effect.jar"))
        .contains("no side-effect class")
        .contains("read_only, idempotent_write, non_idempotent_write, irreversible_action");
  }

  @Test
  void unknown_side_effect_class() {
    assertThat(reasonOf("unknown-side-effect.jar"))
        .contains("invalid descriptor from handler d.Unknown")
        .contains("unknown side-effect class 'sometimes'");
  }

  @Test
  void input_schema_not_json() {
    assertThat(reasonOf("bad-schema.jar"))
        .contains("invalid descriptor from handler d.Schema")
        .contains("input schema is not valid JSON");
  }

  @Test
  void one_bad_handler_skips_its_whole_plugin() {
    assertThat(reasonOf("mixed.jar")).contains("mixed.Bad").doesNotContain("mixed.Good");
    assertThat(result.catalog().find("mixed.good", "1")).isEmpty();
  }

  @Test
  void duplicate_key_is_refused_for_both_plugins() {
    assertThat(reasonOf("dup-a.jar"))
        .startsWith(
            "dup@1 (handler dupa.Handler) is also offered by dupb.Handler in "
                + dir.resolve("dup-b.jar"))
        .contains("refused for all of them");
    assertThat(reasonOf("dup-b.jar"))
        .startsWith(
            "dup@1 (handler dupb.Handler) is also offered by dupa.Handler in "
                + dir.resolve("dup-a.jar"));
    assertThat(result.catalog().find("dup", "1")).isEmpty();
  }

  @Test
  void entries_run_on_the_plugin_classloader() throws Exception {
    HandlerCatalog.Entry good = result.catalog().find("good.tool", "1.0.0").orElseThrow();
    assertThat(good.plugin()).isEqualTo(dir.resolve("good.jar").toString());
    assertThat(good.classLoader())
        .isInstanceOf(PluginClassLoader.class)
        .isSameAs(good.handler().getClass().getClassLoader());
    assertThat(good.descriptor().sideEffectClass()).isEqualTo(SideEffectClass.READ_ONLY);
    assertThat(good.descriptorHash()).isEqualTo(DescriptorHash.of(good.descriptor()));

    HandlerCatalog.Entry folder = result.catalog().find("folder.tool", "default").orElseThrow();
    assertThat(folder.handler().handle(null)).isEqualTo(ToolResult.text("from lib"));
    assertThat(folder.plugin()).isEqualTo(dir.resolve("good-folder").toString());
  }

  @Test
  void zero_max_concurrency_is_advertised_as_one() {
    assertThat(
            result
                .catalog()
                .find("folder.tool", "default")
                .orElseThrow()
                .descriptor()
                .maxConcurrency())
        .isEqualTo(1);
  }

  @Test
  void handlers_are_created_with_the_plugin_as_context_classloader_which_is_then_restored()
      throws Exception {
    HandlerCatalog.Entry good = result.catalog().find("good.tool", "1.0.0").orElseThrow();
    assertThat(good.handler().handle(null)).isEqualTo(ToolResult.text("true"));
    assertThat(tcclAfter).isSameAs(tcclBefore);
  }

  @Test
  void records_every_readable_plugin_with_jar_digests() throws Exception {
    Map<String, List<String>> jars =
        result.plugins().stream()
            .collect(
                Collectors.toMap(
                    p -> dir.relativize(p.path()).toString(),
                    p ->
                        p.jars().stream()
                            .map(j -> p.path().relativize(j.path()).toString())
                            .toList()));
    assertThat(jars)
        .doesNotContainKeys("empty-folder", ".hidden.jar", "notes.txt")
        .containsEntry("corrupt.jar", List.of(""))
        .containsEntry("good-folder", List.of("good-folder.jar", "lib/dep.jar"))
        .hasSize(23);
    PluginSource.Jar corrupt =
        result.plugins().stream()
            .filter(p -> p.path().endsWith("corrupt.jar"))
            .findFirst()
            .orElseThrow()
            .jars()
            .getFirst();
    assertThat(corrupt.sha256())
        .isEqualTo(
            HexFormat.of()
                .formatHex(
                    MessageDigest.getInstance("SHA-256")
                        .digest(Files.readAllBytes(corrupt.path()))));
  }

  @Test
  void missing_plugins_directory_is_a_user_error_naming_the_path_and_fix() {
    Path missing = tmp.resolve("no-such-dir");
    assertThatThrownBy(() -> new PluginLoader().load(missing))
        .isInstanceOf(PluginDirectoryException.class)
        .hasMessage(
            "plugins directory "
                + missing
                + " does not exist: create it and put plugin "
                + "jars in it, or point --plugins at the folder that holds them");
  }

  @Test
  void plugins_path_that_is_a_file_is_a_user_error() {
    Path file = dir.resolve("notes.txt");
    assertThatThrownBy(() -> new PluginLoader().load(file))
        .isInstanceOf(PluginDirectoryException.class)
        .hasMessageContaining(file + " is not a directory");
  }

  @Test
  void empty_plugins_directory_loads_nothing_without_problems(@TempDir Path empty) {
    LoadResult r = new PluginLoader().load(empty);
    assertThat(r.catalog().size()).isZero();
    assertThat(r.problems()).isEmpty();
    assertThat(r.plugins()).isEmpty();
  }
}
