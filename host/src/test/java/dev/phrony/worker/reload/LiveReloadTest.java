package dev.phrony.worker.reload;

import static dev.phrony.worker.reload.PluginsFolder.closed;
import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.config.HandlerOverrides;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.plugin.LoadResult;
import dev.phrony.worker.plugin.PluginLoader;
import dev.phrony.worker.plugin.PluginUnloader;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.work.WorkClient;
import dev.phrony.worker.work.WorkOptions;
import dev.phrony.worker.work.WorkerIdentity;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A reload end to end, wired as the worker wires it: a real plugins folder, its {@link LiveReload}
 * and a Work client registered with a LocalRuntime, which routes to the new generation and lets the
 * old one go ({@link PluginReloaderTest} covers the rest with a fake client).
 */
class LiveReloadTest {
  @TempDir Path tmp;

  private String answer(LocalRuntime rt, String tool) throws Exception {
    return rt.dispatch(Call.of(tool, "1", "{}")).get(30, TimeUnit.SECONDS).text();
  }

  @Test
  void a_replaced_plugin_is_served_by_a_new_generation_and_its_old_loader_closed_after()
      throws Exception {
    PluginsFolder folder = new PluginsFolder(tmp);
    folder.deploy("a.jar", folder.plugin("a", "a", 2, "A1"));
    folder.deploy("b.jar", folder.plugin("b", "b", 2, "B"));
    LoadResult first = new PluginLoader().load(folder.dir);
    HandlerOverrides.Applied applied = HandlerOverrides.apply(List.of(), first.catalog());
    List<Integer> kept = new ArrayList<>();
    // A lease short enough that the old generation leaves routing within the test.
    try (LocalRuntime rt = LocalRuntime.builder().port(0).leaseTtl(Duration.ofSeconds(1)).start();
        WorkClient client =
            new WorkClient(
                WorkOptions.defaults(rt.target(), new WorkerIdentity("w", "", "")),
                applied.served(),
                new MemoryOutbox());
        LiveReload live =
            new LiveReload(
                folder.dir,
                timers ->
                    new PluginReloader(
                        folder.dir,
                        false,
                        List.of(),
                        first,
                        applied,
                        Generations.of(client),
                        kept::add,
                        o -> {},
                        false,
                        PluginUnloader.DEFAULT_MAX_LEAKED,
                        timers))) {
      client.start();
      Await.until("registered", client::registered);
      ClassLoader a1 = first.catalog().find("a", "1").orElseThrow().classLoader();
      ClassLoader b = first.catalog().find("b", "1").orElseThrow().classLoader();
      assertThat(answer(rt, "a")).isEqualTo("A1");

      folder.deploy("a.jar", folder.plugin("a", "a", 4, "A2")); // another advertisement
      PluginReloader.Outcome o = live.reload("test").get(30, TimeUnit.SECONDS);

      assertThat(o.result()).isEqualTo(PluginReloader.Result.RELOADED);
      assertThat(o.generation()).isEqualTo(2);
      assertThat(o.message()).doesNotContain("not registered yet");
      assertThat(kept).as("the generation is kept before it registers").containsExactly(2);
      assertThat(rt.worker("w.g2")).isPresent();
      Await.until(
          "the old generation closed and its loader with it",
          () -> closed(a1),
          Duration.ofSeconds(20));
      assertThat(closed(b)).as("the unchanged plugin keeps its loader").isFalse();
      assertThat(answer(rt, "a")).isEqualTo("A2");
      assertThat(answer(rt, "b")).isEqualTo("B");
    }
  }
}
