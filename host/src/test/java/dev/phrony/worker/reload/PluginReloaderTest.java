package dev.phrony.worker.reload;

import static dev.phrony.worker.plugin.TestPlugins.descriptor;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.worker.config.HandlerOverrides;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.plugin.LoadResult;
import dev.phrony.worker.plugin.PluginLoader;
import dev.phrony.worker.plugin.TestPlugins;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Event;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.work.WorkClient;
import dev.phrony.worker.work.WorkOptions;
import dev.phrony.worker.work.WorkerIdentity;
import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Reloads of a real plugins folder served to a LocalRuntime: what is refused, what is kept, and
 * that a replaced plugin's classloader is closed only once its generation is gone.
 */
class PluginReloaderTest {
  @TempDir Path tmp;

  private Path dir;
  private TestPlugins build;
  private LocalRuntime rt;
  private WorkClient client;
  private final List<PluginReloader.Outcome> outcomes = new ArrayList<>();
  private final List<Integer> kept = new ArrayList<>();

  @BeforeEach
  void setUp() throws IOException {
    dir = Files.createDirectories(tmp.resolve("plugins"));
    build = new TestPlugins(tmp.resolve("build"));
    // A lease short enough that an old generation leaves routing within the test.
    rt = LocalRuntime.builder().port(0).leaseTtl(Duration.ofSeconds(1)).start();
  }

  @AfterEach
  void tearDown() {
    if (client != null) {
      client.close();
    }
    rt.close();
  }

  private TestPlugins.JarBuilder plugin(String pkg, String tool, int max, String answer) {
    return build
        .jar()
        .handler(
            pkg + ".Handler",
            descriptor(tool, "1", "read_only")
                .replace(".build()", ".maxConcurrency(" + max + ").build()"),
            "",
            "return ToolResult.text(\"" + answer + "\");");
  }

  /** As a deployment does it: written beside the folder, then moved in. */
  private void deploy(String jarName, TestPlugins.JarBuilder jar) throws IOException {
    Path staged = jar.writeTo(tmp.resolve("staging").resolve(jarName));
    Files.move(
        staged,
        dir.resolve(jarName),
        StandardCopyOption.REPLACE_EXISTING,
        StandardCopyOption.ATOMIC_MOVE);
  }

  private PluginReloader start(boolean strict) {
    LoadResult first = new PluginLoader().load(dir);
    HandlerOverrides.Applied applied = HandlerOverrides.apply(List.of(), first.catalog());
    client =
        new WorkClient(
            WorkOptions.defaults(rt.target(), new WorkerIdentity("w", "", "")),
            applied.served(),
            new MemoryOutbox());
    client.start();
    Await.until("registered", client::registered);
    return new PluginReloader(
        dir,
        strict,
        List.of(),
        first,
        applied,
        client,
        kept::add,
        outcomes::add,
        false,
        InstantSource.system());
  }

  private String answer(String tool) throws Exception {
    Outcome o = rt.dispatch(Call.of(tool, "1", "{}")).get(30, TimeUnit.SECONDS);
    return o.text();
  }

  /** True when {@code loader} was closed: a closed URLClassLoader finds no resource any more. */
  private static boolean closed(ClassLoader loader) {
    URL found = ((URLClassLoader) loader).findResource("META-INF/MANIFEST.MF");
    return found == null;
  }

  @Test
  void a_replaced_plugin_is_served_by_a_new_generation_and_its_old_loader_closed_after()
      throws Exception {
    deploy("a.jar", plugin("a", "a", 2, "A1"));
    deploy("b.jar", plugin("b", "b", 2, "B"));
    try (PluginReloader reloader = start(false)) {
      ClassLoader a1 =
          reloader.served().loaded().catalog().find("a", "1").orElseThrow().classLoader();
      ClassLoader b =
          reloader.served().loaded().catalog().find("b", "1").orElseThrow().classLoader();
      assertThat(answer("a")).isEqualTo("A1");

      deploy("a.jar", plugin("a", "a", 4, "A2")); // another concurrency: another advertisement
      PluginReloader.Outcome o = reloader.reload("test").get(30, TimeUnit.SECONDS);

      assertThat(o.result()).isEqualTo(PluginReloader.Result.RELOADED);
      assertThat(o.generation()).isEqualTo(2);
      assertThat(o.change().replaced()).containsExactly("a@1");
      assertThat(o.message()).startsWith("plugins_reloaded added= replaced=a@1 removed=");
      assertThat(kept).as("the generation is kept before it registers").containsExactly(2);
      assertThat(rt.worker("w.g2")).isPresent();
      Await.until(
          "the old generation closed and its loader with it",
          () -> closed(a1),
          Duration.ofSeconds(20));
      assertThat(closed(b)).as("the unchanged plugin keeps its loader").isFalse();
      assertThat(answer("a")).isEqualTo("A2");
      assertThat(answer("b")).isEqualTo("B");
    }
  }

  @Test
  void strict_refuses_a_reload_with_a_problem_and_the_running_generation_stays() throws Exception {
    deploy("a.jar", plugin("a", "a", 2, "A"));
    try (PluginReloader reloader = start(true)) {
      deploy("b.jar", plugin("b", "b", 2, "B"));
      TestPlugins.corruptJar(dir.resolve("broken.jar"));
      int registers = registers();

      PluginReloader.Outcome o = reloader.reload("test").get(30, TimeUnit.SECONDS);

      assertThat(o.result()).isEqualTo(PluginReloader.Result.REFUSED);
      assertThat(o.problems()).extracting(p -> p.plugin()).anyMatch(p -> p.endsWith("broken.jar"));
      assertThat(o.generation()).isEqualTo(1);
      assertThat(client.generation()).isEqualTo(1);
      assertThat(registers()).as("nothing sent").isEqualTo(registers);
      assertThat(reloader.served().applied().served().find("b", "1")).isEmpty();
      assertThat(answer("a")).isEqualTo("A");
    }
  }

  @Test
  void without_strict_the_rest_is_served_and_the_problem_reported() throws Exception {
    deploy("a.jar", plugin("a", "a", 2, "A"));
    try (PluginReloader reloader = start(false)) {
      deploy("b.jar", plugin("b", "b", 2, "B"));
      TestPlugins.corruptJar(dir.resolve("broken.jar"));

      PluginReloader.Outcome o = reloader.reload("test").get(30, TimeUnit.SECONDS);

      assertThat(o.result()).isEqualTo(PluginReloader.Result.RELOADED);
      assertThat(o.change().added()).containsExactly("b@1");
      assertThat(o.problems()).hasSize(1);
      assertThat(answer("b")).isEqualTo("B");
    }
  }

  @Test
  void a_broken_jar_is_warned_about_once_while_it_stays_and_again_if_it_comes_back()
      throws Exception {
    deploy("a.jar", plugin("a", "a", 2, "A"));
    ListAppender<ILoggingEvent> logs = new ListAppender<>();
    Logger reloaderLog = (Logger) LoggerFactory.getLogger(PluginReloader.class);
    logs.start();
    reloaderLog.addAppender(logs);
    try (PluginReloader reloader = start(false)) {
      TestPlugins.corruptJar(dir.resolve("broken.jar"));
      reloader.reload("test").get(30, TimeUnit.SECONDS);
      deploy("b.jar", plugin("b", "b", 2, "B"));
      PluginReloader.Outcome o = reloader.reload("test").get(30, TimeUnit.SECONDS);
      assertThat(o.problems()).as("still reported by each reload").hasSize(1);
      assertThat(warnings(logs, "broken.jar")).as("logged once while it stays").hasSize(1);
      assertThat(warnings(logs, "broken.jar").getFirst()).contains("broken.jar is not a valid jar");

      Files.delete(dir.resolve("broken.jar"));
      reloader.reload("test").get(30, TimeUnit.SECONDS);
      TestPlugins.corruptJar(dir.resolve("broken.jar"));
      reloader.reload("test").get(30, TimeUnit.SECONDS);
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
  void a_reload_of_an_unchanged_folder_sends_nothing() throws Exception {
    deploy("a.jar", plugin("a", "a", 2, "A"));
    try (PluginReloader reloader = start(false)) {
      int events = rt.events().size();
      PluginReloader.Outcome o = reloader.reload("test").get(30, TimeUnit.SECONDS);
      assertThat(o.result()).isEqualTo(PluginReloader.Result.UNCHANGED);
      assertThat(rt.events().subList(events, rt.events().size()))
          .filteredOn(
              e ->
                  e.clientMsg() == null
                      || e.clientMsg().getBodyCase() != WorkClientMsg.BodyCase.HEARTBEAT)
          .filteredOn(
              e ->
                  e.serverMsg() == null
                      || e.serverMsg().getBodyCase()
                          != dev.phrony.runtime.v1.WorkServerMsg.BodyCase.HEARTBEAT_ACK)
          .isEmpty();
      assertThat(outcomes)
          .extracting(PluginReloader.Outcome::result)
          .containsExactly(PluginReloader.Result.UNCHANGED);
    }
  }

  @Test
  void a_reload_asked_for_while_the_worker_stops_is_refused_not_thrown() throws Exception {
    deploy("a.jar", plugin("a", "a", 2, "A"));
    PluginReloader reloader = start(false);
    reloader.close(); // a drain started: the watcher may still see a change
    PluginReloader.Outcome o = reloader.reload("folder changed").get(30, TimeUnit.SECONDS);
    assertThat(o.result()).isEqualTo(PluginReloader.Result.REFUSED);
    assertThat(o.message()).contains("the worker is stopping");
  }

  private int registers() {
    return (int) rt.events().stream().filter(Event.in(WorkClientMsg.BodyCase.REGISTER)).count();
  }
}
