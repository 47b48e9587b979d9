package dev.phrony.worker.serve;

import static dev.phrony.worker.plugin.TestPlugins.descriptor;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.worker.UserErrorException;
import dev.phrony.worker.config.HandlerOverrides;
import dev.phrony.worker.config.Source;
import dev.phrony.worker.config.WorkerConfig;
import dev.phrony.worker.ops.ListenAddress;
import dev.phrony.worker.ops.LogFormat;
import dev.phrony.worker.ops.LogLevel;
import dev.phrony.worker.ops.OpsHttpServer;
import dev.phrony.worker.outbox.Durability;
import dev.phrony.worker.plugin.PluginUnloader;
import dev.phrony.worker.plugin.TestPlugins;
import dev.phrony.worker.reload.NotStartingException;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.transport.Transport;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The worker {@code run} serves, assembled from a {@link WorkerConfig} in this JVM: what it refuses
 * before anything is opened, what a failed open leaves behind (nothing), and a worker that serves a
 * call from its plugins folder and drains. (The command around it, with its signals and exit codes,
 * is the process-level RunIT's.)
 */
class WorkerTest {
  private static final String WORKER_ID = "worker-test-1";
  private static final Function<dev.phrony.worker.reload.PluginReloader, OpsHttpServer.Plugins>
      NO_ROUTES = reloader -> null;

  @TempDir Path tmp;

  private Path plugins;

  @BeforeEach
  void plugins() throws Exception {
    plugins = tmp.resolve("plugins");
    new TestPlugins(tmp.resolve("build"))
        .jar()
        .handler("w.Hello", descriptor("hello", "1.0.0", "read_only"))
        .writeTo(plugins.resolve("hello.jar"));
  }

  @Test
  void strict_and_a_plugin_problem_refuse_to_start_before_the_state_dir_is_touched()
      throws Exception {
    TestPlugins.corruptJar(plugins.resolve("broken.jar"));
    WorkerConfig config = config(true, List.of(), Optional.empty(), "127.0.0.1:1");

    assertThatThrownBy(() -> Worker.open(config, NO_ROUTES))
        .isInstanceOf(NotStartingException.class)
        .hasMessage("--strict: 1 plugin problem(s), not starting (see 'list-handlers')");
    assertThat(config.stateDir()).doesNotExist();
  }

  @Test
  void every_handler_disabled_is_nothing_to_serve() throws Exception {
    List<String> problems = new ArrayList<>();
    List<HandlerOverrides.Rule> off =
        HandlerOverrides.parse("hello@1.0.0:enabled=false", Source.flag("--handler"), 0, problems);
    assertThat(problems).isEmpty();
    WorkerConfig config = config(false, off, Optional.empty(), "127.0.0.1:1");

    assertThatThrownBy(() -> Worker.open(config, NO_ROUTES))
        .isInstanceOf(NotStartingException.class)
        .hasMessage(
            "no handlers to serve in "
                + plugins
                + " (every one is disabled) (see"
                + " 'list-handlers')");
    assertThat(config.stateDir()).doesNotExist();
  }

  @Test
  void a_worker_that_cannot_listen_names_the_setting_and_leaves_nothing_open() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      String address = "127.0.0.1:" + taken.getLocalPort();
      WorkerConfig config = config(false, List.of(), ListenAddress.parse(address), "127.0.0.1:1");

      assertThatThrownBy(
              () ->
                  Worker.open(
                      config,
                      reloader ->
                          new OpsHttpServer.Plugins() {
                            @Override
                            public String handlersJson() {
                              return "{}";
                            }

                            @Override
                            public OpsHttpServer.Reply reload() {
                              return new OpsHttpServer.Reply(409, "{}");
                            }
                          }))
          .isInstanceOf(UserErrorException.class)
          .hasMessageStartingWith("--http " + address + ": cannot listen (");
    }
    // The state dir it had locked is free again: a worker opens it at once.
    try (Worker again =
        Worker.open(config(false, List.of(), Optional.empty(), "127.0.0.1:1"), NO_ROUTES)) {
      assertThat(again).isNotNull();
    }
  }

  @Test
  void a_worker_serves_its_plugins_folder_then_drains_and_leaves_the_runtime() throws Exception {
    try (LocalRuntime rt = LocalRuntime.builder().port(0).leaseTtl(Duration.ofSeconds(1)).start()) {
      try (Worker worker =
          Worker.open(config(false, List.of(), Optional.empty(), rt.target()), NO_ROUTES)) {
        worker.start();
        Await.until(
            "worker registered", () -> rt.worker(WORKER_ID).filter(w -> w.connected()).isPresent());

        Outcome o = rt.dispatchAndWait(Call.of("hello", "1.0.0", "{}"));
        assertThat(o).isInstanceOf(Outcome.Result.class);
        assertThat(o.text()).isEqualTo("w.Hello");

        worker.drain();
        Await.until(
            "the worker's stream gone from the runtime",
            () -> rt.worker(WORKER_ID).filter(w -> w.connected()).isEmpty());
      }
    }
  }

  private WorkerConfig config(
      boolean strict,
      List<HandlerOverrides.Rule> handlers,
      Optional<ListenAddress> http,
      String runtime) {
    return new WorkerConfig(
        plugins,
        strict,
        false,
        tmp.resolve("state"),
        Durability.WRITES,
        Duration.ofDays(7),
        runtime,
        Optional.of(WORKER_ID),
        Optional.empty(),
        Optional.empty(),
        Duration.ofSeconds(10),
        1 << 20,
        8 << 20,
        false,
        0,
        PluginUnloader.DEFAULT_MAX_LEAKED,
        Optional.empty(),
        http,
        LogFormat.text,
        LogLevel.INFO,
        Transport.plaintext(),
        handlers,
        Optional.empty(),
        List.of());
  }
}
