package dev.phrony.worker.reload;

import static dev.phrony.worker.reload.PluginsFolder.closed;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.phrony.worker.config.HandlerOverrides;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.plugin.LoadResult;
import dev.phrony.worker.plugin.PluginLoader;
import dev.phrony.worker.plugin.PluginUnloader;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.FakeScheduler;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Reloads of a real plugins folder handed to a fake Work client ({@link FakeGenerations}) on the
 * fake scheduler: what is refused, what is kept, that a replaced plugin's classloader is closed
 * only once its generation is gone, and the bound on the register wait, in no wall time. {@link
 * LiveReloadTest} serves a reload to a runtime end to end.
 */
class PluginReloaderTest {
  @TempDir Path tmp;

  private PluginsFolder folder;
  private final FakeScheduler timers = new FakeScheduler();
  private final List<PluginReloader.Outcome> outcomes = new ArrayList<>();

  @BeforeEach
  void setUp() throws IOException {
    folder = new PluginsFolder(tmp);
  }

  private PluginReloader start(boolean strict, FakeGenerations generations) {
    LoadResult first = new PluginLoader().load(folder.dir);
    return new PluginReloader(
        folder.dir,
        strict,
        List.of(),
        first,
        HandlerOverrides.apply(List.of(), first.catalog()),
        generations,
        generations::keep,
        outcomes::add,
        false,
        PluginUnloader.DEFAULT_MAX_LEAKED,
        timers);
  }

  private static ClassLoader loaderOf(HandlerCatalog catalog, String tool) {
    return catalog.find(tool, "1").orElseThrow().classLoader();
  }

  private static PluginReloader.Outcome reload(PluginReloader reloader) throws Exception {
    return reloader.reload("test").get(30, TimeUnit.SECONDS);
  }

  @Test
  void a_replaced_plugin_is_served_as_a_new_generation_and_its_old_loader_closed_once_unused()
      throws Exception {
    folder.deploy("a.jar", folder.plugin("a", "a", 2, "A1"));
    folder.deploy("b.jar", folder.plugin("b", "b", 2, "B"));
    FakeGenerations generations = new FakeGenerations(true);
    try (PluginReloader reloader = start(false, generations)) {
      ClassLoader a1 = loaderOf(reloader.served().loaded().catalog(), "a");
      ClassLoader b = loaderOf(reloader.served().loaded().catalog(), "b");

      folder.deploy("a.jar", folder.plugin("a", "a", 4, "A2")); // another advertisement
      PluginReloader.Outcome o = reload(reloader);

      assertThat(o.result()).isEqualTo(PluginReloader.Result.RELOADED);
      assertThat(o.generation()).isEqualTo(2);
      assertThat(o.change().replaced()).containsExactly("a@1");
      assertThat(o.message()).startsWith("plugins_reloaded added= replaced=a@1 removed=");
      assertThat(o.message()).doesNotContain("not registered yet");
      assertThat(generations.log)
          .as("the generation is kept before it is served")
          .containsExactly("keep 2", "serve 2");
      HandlerCatalog served = generations.served.getFirst().catalog();
      assertThat(loaderOf(served, "a")).isNotSameAs(a1);
      assertThat(loaderOf(served, "b")).as("the unchanged plugin keeps its loader").isSameAs(b);
      assertThat(reloader.served().generation()).isEqualTo(2);
      assertThat(timers.pending()).as("the register wait's bound is cancelled").isZero();

      assertThat(generations.unusedWaits).as("nothing asked before the old one retires").isEmpty();
      generations.served.getFirst().handover().retired().complete(null);
      FakeGenerations.UnusedWait wait = generations.unusedWaits.getFirst();
      assertThat(wait.loaders()).containsExactly(a1);
      assertThat(closed(a1)).as("a call may still run its code").isFalse();

      wait.unused().complete(null);
      // The unloader cleans up and closes it on a thread of its own (PluginUnloader).
      dev.phrony.worker.testkit.Await.until("the old loader closed", () -> closed(a1));
      assertThat(closed(b)).isFalse();
    }
  }

  @Test
  void a_rebuilt_plugin_advertised_as_before_is_served_on_the_running_generation()
      throws Exception {
    folder.deploy("a.jar", folder.plugin("a", "a", 2, "A1"));
    FakeGenerations generations = new FakeGenerations(true);
    try (PluginReloader reloader = start(false, generations)) {
      folder.deploy("a.jar", folder.plugin("a", "a", 2, "A2")); // new code, same descriptor

      PluginReloader.Outcome o = reload(reloader);

      assertThat(o.result()).isEqualTo(PluginReloader.Result.RELOADED);
      assertThat(o.generation()).isEqualTo(1);
      assertThat(o.message()).contains("(same advertisement: nothing sent)");
      assertThat(generations.log).as("no generation kept").containsExactly("serve 1");
    }
  }

  @Test
  void a_generation_not_registered_within_the_wait_is_reported_so() throws Exception {
    folder.deploy("a.jar", folder.plugin("a", "a", 2, "A1"));
    FakeGenerations generations = new FakeGenerations(false); // the runtime does not answer
    try (PluginReloader reloader = start(false, generations)) {
      folder.deploy("b.jar", folder.plugin("b", "b", 2, "B"));

      CompletableFuture<PluginReloader.Outcome> o = reloader.reload("test");
      Await.until("the register wait armed", () -> timers.pending() == 1);
      timers.advance(PluginReloader.REGISTER_WAIT.minusMillis(1));
      assertThat(o).as("still waiting").isNotDone();
      timers.advance(Duration.ofMillis(1));

      assertThat(o.get(30, TimeUnit.SECONDS).message())
          .endsWith(" (not registered yet: the runtime does not answer)");
      assertThat(o.get().result()).isEqualTo(PluginReloader.Result.RELOADED);
      assertThat(reloader.served().generation()).as("served all the same").isEqualTo(2);
    }
  }

  @Test
  void strict_refuses_a_reload_with_a_problem_and_the_running_generation_stays() throws Exception {
    folder.deploy("a.jar", folder.plugin("a", "a", 2, "A"));
    FakeGenerations generations = new FakeGenerations(true);
    try (PluginReloader reloader = start(true, generations)) {
      folder.deploy("b.jar", folder.plugin("b", "b", 2, "B"));
      folder.corrupt("broken.jar");

      PluginReloader.Outcome o = reload(reloader);

      assertThat(o.result()).isEqualTo(PluginReloader.Result.REFUSED);
      assertThat(o.problems()).extracting(p -> p.plugin()).anyMatch(p -> p.endsWith("broken.jar"));
      assertThat(o.generation()).isEqualTo(1);
      assertThat(generations.log).as("nothing kept or served").isEmpty();
      assertThat(reloader.served().applied().served().find("b", "1")).isEmpty();
    }
  }

  @Test
  void without_strict_the_rest_is_served_and_the_problem_reported() throws Exception {
    folder.deploy("a.jar", folder.plugin("a", "a", 2, "A"));
    FakeGenerations generations = new FakeGenerations(true);
    try (PluginReloader reloader = start(false, generations)) {
      folder.deploy("b.jar", folder.plugin("b", "b", 2, "B"));
      folder.corrupt("broken.jar");

      PluginReloader.Outcome o = reload(reloader);

      assertThat(o.result()).isEqualTo(PluginReloader.Result.RELOADED);
      assertThat(o.change().added()).containsExactly("b@1");
      assertThat(o.problems()).hasSize(1);
      assertThat(generations.served.getFirst().catalog().find("b", "1")).isPresent();
    }
  }

  @Test
  void a_broken_jar_is_warned_about_once_while_it_stays_and_again_if_it_comes_back()
      throws Exception {
    folder.deploy("a.jar", folder.plugin("a", "a", 2, "A"));
    ListAppender<ILoggingEvent> logs = new ListAppender<>();
    Logger reloaderLog = (Logger) LoggerFactory.getLogger(PluginReloader.class);
    logs.start();
    reloaderLog.addAppender(logs);
    try (PluginReloader reloader = start(false, new FakeGenerations(true))) {
      folder.corrupt("broken.jar");
      reload(reloader);
      folder.deploy("b.jar", folder.plugin("b", "b", 2, "B"));
      PluginReloader.Outcome o = reload(reloader);
      assertThat(o.problems()).as("still reported by each reload").hasSize(1);
      assertThat(warnings(logs, "broken.jar")).as("logged once while it stays").hasSize(1);
      assertThat(warnings(logs, "broken.jar").getFirst()).contains("broken.jar is not a valid jar");

      Files.delete(folder.dir.resolve("broken.jar"));
      reload(reloader);
      folder.corrupt("broken.jar");
      reload(reloader);
      assertThat(warnings(logs, "broken.jar")).as("back again: warned again").hasSize(2);
    } finally {
      reloaderLog.detachAppender(logs);
    }
  }

  private static List<String> warnings(ListAppender<ILoggingEvent> logs, String text) {
    return logs.list.stream()
        .filter(e -> e.getLevel() == Level.WARN)
        .map(ILoggingEvent::getFormattedMessage)
        .filter(m -> m.contains(text))
        .toList();
  }

  @Test
  void a_reload_of_an_unchanged_folder_serves_nothing() throws Exception {
    folder.deploy("a.jar", folder.plugin("a", "a", 2, "A"));
    FakeGenerations generations = new FakeGenerations(true);
    try (PluginReloader reloader = start(false, generations)) {
      ClassLoader a = loaderOf(reloader.served().loaded().catalog(), "a");
      PluginReloader.Outcome o = reload(reloader);
      assertThat(o.result()).isEqualTo(PluginReloader.Result.UNCHANGED);
      assertThat(generations.log).isEmpty();
      assertThat(outcomes)
          .extracting(PluginReloader.Outcome::result)
          .containsExactly(PluginReloader.Result.UNCHANGED);
      assertThat(closed(a)).as("the running load stays open").isFalse();
    }
  }

  @Test
  void a_reload_asked_for_while_the_worker_stops_is_refused_not_thrown() throws Exception {
    folder.deploy("a.jar", folder.plugin("a", "a", 2, "A"));
    PluginReloader reloader = start(false, new FakeGenerations(true));
    reloader.close(); // a drain started: the watcher may still see a change
    PluginReloader.Outcome o = reloader.reload("folder changed").get(30, TimeUnit.SECONDS);
    assertThat(o.result()).isEqualTo(PluginReloader.Result.REFUSED);
    assertThat(o.message()).contains("the worker is stopping");
  }
}
