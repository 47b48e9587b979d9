package dev.phrony.worker.plugin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolCall;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.api.ToolResult;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link CatalogChange}: what changed between two catalogs, and whether the runtime must know. */
class CatalogChangeTest {

  /** A handler created here, serving {@code descriptor}. */
  private record Fixed(ToolDescriptor descriptor) implements ToolHandler {
    @Override
    public ToolResult handle(ToolCall call) {
      return ToolResult.text(descriptor.key());
    }
  }

  private static ToolDescriptor.Builder tool(String name, String version) {
    return ToolDescriptor.builder(name).version(version).sideEffectClass(SideEffectClass.READ_ONLY);
  }

  private static HandlerCatalog.Entry entry(ToolDescriptor.Builder d) {
    return HandlerCatalog.Entry.of(new Fixed(d.build()), "test");
  }

  private static HandlerCatalog catalog(HandlerCatalog.Entry... entries) {
    return HandlerCatalog.of(List.of(entries));
  }

  @Test
  void same_catalog_is_no_change() {
    HandlerCatalog c = catalog(entry(tool("a", "1")), entry(tool("b", "2")));

    CatalogChange change = CatalogChange.between(c, c);

    assertThat(change.none()).isTrue();
    assertThat(change.advertisementChanged()).isFalse();
    assertThat(change.summary()).isEqualTo("added= replaced= removed=");
  }

  @Test
  void added_and_removed_keys_sorted_and_summarised() {
    HandlerCatalog.Entry kept = entry(tool("x", "1"));
    HandlerCatalog before = catalog(entry(tool("c", "1")), kept);
    HandlerCatalog after = catalog(entry(tool("b", "2")), kept, entry(tool("a", "1")));

    CatalogChange change = CatalogChange.between(before, after);

    assertThat(change.added()).containsExactly("a@1", "b@2");
    assertThat(change.removed()).containsExactly("c@1");
    assertThat(change.replaced()).isEmpty();
    assertThat(change.none()).isFalse();
    assertThat(change.advertisementChanged()).isTrue();
    assertThat(change.summary()).isEqualTo("added=a@1,b@2 replaced= removed=c@1");
  }

  @Test
  void only_removed_changes_the_advertisement() {
    CatalogChange change = CatalogChange.between(catalog(entry(tool("c", "1"))), catalog());
    assertThat(change.advertisementChanged()).isTrue();
    assertThat(change.summary()).isEqualTo("added= replaced= removed=c@1");
  }

  @Test
  void new_handler_instance_with_the_same_descriptor_is_replaced_but_advertised_the_same() {
    HandlerCatalog before = catalog(entry(tool("a", "1")), entry(tool("b", "1")));
    HandlerCatalog after = catalog(entry(tool("a", "1")), before.entries().get(1));

    CatalogChange change = CatalogChange.between(before, after);

    assertThat(change.replaced()).containsExactly("a@1");
    assertThat(change.none()).isFalse();
    assertThat(change.advertisementChanged()).isFalse();
    assertThat(change.summary()).isEqualTo("added= replaced=a@1 removed=");
  }

  @Test
  void an_entry_rebuilt_around_the_same_handler_and_advertisement_is_no_change() {
    HandlerCatalog.Entry e = entry(tool("a", "1").maxConcurrency(3));
    // As operator overrides rebuild entries on every apply.
    HandlerCatalog.Entry same = e.withOverrides(3, Optional.empty());

    assertThat(same).isNotSameAs(e);
    assertThat(CatalogChange.between(catalog(e), catalog(same)).none()).isTrue();
  }

  @Test
  void max_concurrency_change_is_an_advertisement_change() {
    HandlerCatalog.Entry e = entry(tool("a", "1").maxConcurrency(3));

    CatalogChange change =
        CatalogChange.between(catalog(e), catalog(e.withOverrides(5, Optional.empty())));

    assertThat(change.replaced()).containsExactly("a@1");
    assertThat(change.advertisementChanged()).isTrue();
  }

  @Test
  void max_concurrency_zero_and_one_advertise_the_same() {
    HandlerCatalog.Entry e = entry(tool("a", "1").maxConcurrency(0));

    CatalogChange change =
        CatalogChange.between(catalog(e), catalog(e.withOverrides(1, Optional.empty())));

    assertThat(change.none()).isTrue();
    assertThat(change.advertisementChanged()).isFalse();
  }

  @Test
  void contract_version_or_descriptor_hash_change_is_an_advertisement_change() {
    HandlerCatalog before = catalog(entry(tool("a", "1")), entry(tool("b", "1")));
    HandlerCatalog after =
        catalog(
            entry(tool("a", "1").contractVersion("2")),
            entry(tool("b", "1").sideEffectClass(SideEffectClass.IDEMPOTENT_WRITE)));

    CatalogChange change = CatalogChange.between(before, after);

    assertThat(change.replaced()).containsExactly("a@1", "b@1");
    assertThat(change.readvertised()).containsExactly("a@1", "b@1");
    assertThat(change.advertisementChanged()).isTrue();
  }

  @Test
  void description_alone_does_not_change_the_advertisement() {
    HandlerCatalog before = catalog(entry(tool("a", "1").description("old words")));
    HandlerCatalog after = catalog(entry(tool("a", "1").description("new words")));

    CatalogChange change = CatalogChange.between(before, after);

    assertThat(change.replaced()).containsExactly("a@1");
    assertThat(change.advertisementChanged()).isFalse();
  }

  @Test
  void three_part_constructor_reads_every_replaced_key_as_readvertised() {
    CatalogChange change = new CatalogChange(List.of(), List.of(), List.of("b@1", "a@1"));

    assertThat(change.replaced()).containsExactly("a@1", "b@1");
    assertThat(change.advertisementChanged()).isTrue();
    assertThat(new CatalogChange(List.of(), List.of(), List.of()).none()).isTrue();
    assertThatThrownBy(() -> new CatalogChange(List.of(), List.of(), List.of(), List.of("a@1")))
        .isInstanceOf(IllegalArgumentException.class);
  }

  /** With real jars: a rebuild behind the same descriptor, then a new max concurrency. */
  @Test
  void reloaded_jars(@TempDir Path tmp) throws IOException {
    Path dir = Files.createDirectories(tmp.resolve("plugins"));
    TestPlugins build = new TestPlugins(tmp.resolve("build"));
    String descriptor =
        "ToolDescriptor.builder(\"p\").version(\"1\")"
            + ".sideEffectClass(SideEffectClass.READ_ONLY).maxConcurrency(%d).build()";
    build
        .jar()
        .handler("p.Handler", descriptor.formatted(2), "", "return ToolResult.text(\"v1\");")
        .writeTo(dir.resolve("p.jar"));
    PluginLoader loader = new PluginLoader();
    LoadResult v1 = loader.load(dir);

    swap(
        dir,
        tmp,
        build
            .jar()
            .handler("p.Handler", descriptor.formatted(2), "", "return ToolResult.text(\"v2\");"));
    LoadResult v2 = loader.reload(dir, v1);
    CatalogChange newCode = CatalogChange.between(v1.catalog(), v2.catalog());
    assertThat(newCode.replaced()).containsExactly("p@1");
    assertThat(newCode.advertisementChanged()).isFalse();
    assertThat(newCode.summary()).isEqualTo("added= replaced=p@1 removed=");

    swap(
        dir,
        tmp,
        build
            .jar()
            .handler("p.Handler", descriptor.formatted(3), "", "return ToolResult.text(\"v2\");"));
    LoadResult v3 = loader.reload(dir, v2);
    CatalogChange wider = CatalogChange.between(v2.catalog(), v3.catalog());
    assertThat(wider.replaced()).containsExactly("p@1");
    assertThat(wider.advertisementChanged()).isTrue();

    assertThat(CatalogChange.between(v3.catalog(), loader.reload(dir, v3).catalog()).none())
        .isTrue();
  }

  private static void swap(Path dir, Path tmp, TestPlugins.JarBuilder jar) throws IOException {
    Path staged = jar.writeTo(tmp.resolve("staging/p.jar"));
    Files.move(
        staged,
        dir.resolve("p.jar"),
        StandardCopyOption.REPLACE_EXISTING,
        StandardCopyOption.ATOMIC_MOVE);
  }
}
