package dev.phrony.worker.reload;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.phrony.worker.config.HandlerOverrides;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.plugin.LoadResult;
import dev.phrony.worker.plugin.PluginLoader;
import dev.phrony.worker.plugin.PluginUnloader;
import dev.phrony.worker.plugin.TestPlugins;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.work.WorkClient;
import dev.phrony.worker.work.WorkOptions;
import dev.phrony.worker.work.WorkerIdentity;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Reloads of a plugin that pins its class loader the usual ways (20 MB of static data, a thread of
 * its own, a {@code ThreadLocal} on the host thread that runs its calls and one on the Work
 * stream's I/O thread, where its {@code handleAsync} starts, a shutdown hook, a JDBC driver): the
 * worker unloads each old loader, or names the pin it cannot clear and, past the limit, refuses to
 * reload the plugin.
 */
class PluginUnloadTest {
  @TempDir Path tmp;

  private static final long MB = 1 << 20;
  private static final int RELOADS = 30;

  private Path dir;
  private TestPlugins build;
  private LocalRuntime rt;
  private WorkClient client;
  private final dev.phrony.worker.time.ExecutorScheduler timers =
      new dev.phrony.worker.time.ExecutorScheduler("unload-test-timers");

  @BeforeEach
  void setUp() throws Exception {
    dir = Files.createDirectories(tmp.resolve("plugins"));
    build = new TestPlugins(tmp.resolve("build"));
    rt = LocalRuntime.builder().port(0).start();
  }

  @AfterEach
  void tearDown() {
    if (client != null) {
      client.close();
    }
    rt.close();
    timers.close();
  }

  /** Sets a {@code ThreadLocal} on the thread its start runs on: the stream's I/O thread. */
  private static final String ASYNC =
      """
      package leak;
      import dev.phrony.worker.api.*;
      import java.util.concurrent.*;
      public final class Async implements AsyncToolHandler {
        static final ThreadLocal<Object> IO_CACHE = new ThreadLocal<>();
        @Override public ToolDescriptor descriptor() {
          return ToolDescriptor.builder("leak.async").version("1")
              .sideEffectClass(SideEffectClass.READ_ONLY).build();
        }
        @Override public CompletionStage<ToolResult> handleAsync(ToolCall call) {
          IO_CACHE.set(new Handler.Drv()); // never removed: pins the loader from a host thread
          return CompletableFuture.completedFuture(ToolResult.text("async"));
        }
      }
      """;

  /** The plugin's source; {@code threadObeys}: its thread ends when interrupted. */
  private static String pinning(String answer, boolean threadObeys) {
    return """
        package leak;
        import dev.phrony.worker.api.*;
        import java.sql.*;
        import java.util.Properties;
        import java.util.logging.Logger;
        public final class Handler implements ToolHandler {
          static final byte[] DATA = new byte[20 << 20];
          static final ThreadLocal<Object> CACHE = new ThreadLocal<>();
          static final boolean OBEYS = %s;
          static {
            DATA[1] = 1;
            Thread t = new Thread(() -> {
              while (true) {
                try {
                  Thread.sleep(60_000);
                } catch (InterruptedException e) {
                  if (OBEYS) return;
                }
              }
            }, "leak-poller");
            t.setDaemon(true);
            t.start();
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {}, "leak-hook"));
            try {
              DriverManager.registerDriver(new Drv());
            } catch (SQLException e) {
              throw new IllegalStateException(e);
            }
          }
          public static final class Drv implements Driver {
            public Connection connect(String url, Properties p) { return null; }
            public boolean acceptsURL(String url) { return false; }
            public DriverPropertyInfo[] getPropertyInfo(String u, Properties p) {
              return new DriverPropertyInfo[0];
            }
            public int getMajorVersion() { return 1; }
            public int getMinorVersion() { return 0; }
            public boolean jdbcCompliant() { return false; }
            public Logger getParentLogger() { return Logger.getGlobal(); }
          }
          @Override public ToolDescriptor descriptor() {
            return ToolDescriptor.builder("leak.it").version("1")
                .sideEffectClass(SideEffectClass.READ_ONLY).build();
          }
          @Override public ToolResult handle(ToolCall call) {
            CACHE.set(new Drv()); // on the host's thread, never removed: pins the loader
            return ToolResult.text("%s");
          }
        }
        """
        .formatted(threadObeys, answer);
  }

  private void deploy(String answer, boolean threadObeys) throws Exception {
    Path staged =
        build
            .jar()
            .source("leak.Handler", pinning(answer, threadObeys))
            .source("leak.Async", ASYNC)
            .service("leak.Handler")
            .service("leak.Async")
            .writeTo(tmp.resolve("staging").resolve("leak.jar"));
    Files.move(
        staged,
        dir.resolve("leak.jar"),
        StandardCopyOption.REPLACE_EXISTING,
        StandardCopyOption.ATOMIC_MOVE);
  }

  private PluginReloader start() {
    LoadResult first = new PluginLoader().load(dir);
    assertThat(first.problems()).isEmpty();
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
        false,
        List.of(),
        first,
        applied,
        Generations.of(client),
        g -> {},
        o -> {},
        false,
        PluginUnloader.DEFAULT_MAX_LEAKED,
        timers);
  }

  /** Calls both handlers; the answer of {@code leak.it}. */
  private String answer() throws Exception {
    Outcome async = rt.dispatch(Call.of("leak.async", "1", "{}")).get(30, TimeUnit.SECONDS);
    assertThat(async.text()).isEqualTo("async");
    Outcome o = rt.dispatch(Call.of("leak.it", "1", "{}")).get(30, TimeUnit.SECONDS);
    return o.text();
  }

  private static long liveHeap() {
    System.gc();
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

  @Test
  void thirty_reloads_of_a_plugin_with_the_usual_pins_keep_the_live_heap_bounded()
      throws Exception {
    deploy("v0", true);
    try (PluginReloader reloader = start()) {
      assertThat(answer()).isEqualTo("v0");
      long baseline = 0;
      for (int i = 1; i <= RELOADS; i++) {
        deploy("v" + i, true);
        PluginReloader.Outcome o = reloader.reload("test").get(30, TimeUnit.SECONDS);
        assertThat(o.result()).as(o.message()).isEqualTo(PluginReloader.Result.RELOADED);
        assertThat(answer()).isEqualTo("v" + i);
        if (i == 3) {
          baseline = liveHeap();
        }
      }
      long after3 = baseline;
      long[] last = {0};
      Await.until(
          "the live heap within 60 MB of its size after 3 reloads",
          () -> (last[0] = liveHeap()) - after3 < 60 * MB,
          Duration.ofSeconds(60));
      System.out.printf(
          "plugin unload: live heap after 3 reloads %d MB, after %d %d MB (%+d MB)%n",
          after3 / MB, RELOADS, last[0] / MB, (last[0] - after3) / MB);
      Await.until(
          "every old loader unloaded or found leaking",
          () -> reloader.unloadsPending() == 0,
          Duration.ofSeconds(120));
      assertThat(reloader.leakedLoaders()).isEmpty();
    }
  }

  @Test
  void a_pin_that_cannot_be_cleared_is_named_and_past_the_limit_the_plugin_is_not_reloaded()
      throws Exception {
    Logger unloaderLog = (Logger) LoggerFactory.getLogger(PluginUnloader.class);
    ListAppender<ILoggingEvent> logs = new ListAppender<>();
    logs.start();
    unloaderLog.addAppender(logs);
    deploy("v0", false);
    try (PluginReloader reloader = start()) {
      assertThat(answer()).isEqualTo("v0");
      for (int i = 1; i <= PluginUnloader.DEFAULT_MAX_LEAKED; i++) {
        deploy("v" + i, false);
        PluginReloader.Outcome o = reloader.reload("test").get(30, TimeUnit.SECONDS);
        assertThat(o.result()).as(o.message()).isEqualTo(PluginReloader.Result.RELOADED);
        assertThat(answer()).isEqualTo("v" + i);
        int leaks = i;
        Await.until(
            "leak " + leaks + " named",
            () -> reloader.leakedLoaders().getOrDefault("leak.jar", 0) == leaks,
            Duration.ofSeconds(30));
      }
      assertThat(logs.list)
          .filteredOn(e -> e.getFormattedMessage().contains("still in memory"))
          .hasSize(PluginUnloader.DEFAULT_MAX_LEAKED)
          .allSatisfy(
              e ->
                  assertThat(e.getFormattedMessage())
                      .contains("plugin leak.jar")
                      .contains("thread 'leak-poller'")
                      .contains("ignores its interrupt"));

      deploy("v-next", false);
      PluginReloader.Outcome refused = reloader.reload("test").get(30, TimeUnit.SECONDS);
      assertThat(refused.result()).isEqualTo(PluginReloader.Result.REFUSED);
      assertThat(refused.message())
          .contains("plugin leak.jar is not reloaded: 3 of its old class loaders are still in")
          .contains("thread 'leak-poller'");
      assertThat(answer()).as("the running one serves on").isEqualTo("v3");
    } finally {
      unloaderLog.detachAppender(logs);
    }
  }
}
