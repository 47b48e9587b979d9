package dev.phrony.worker.serve;

import static dev.phrony.worker.plugin.TestPlugins.descriptor;
import static org.assertj.core.api.Assertions.as;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.InstanceOfAssertFactories.STRING;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
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
import dev.phrony.worker.state.StateDir;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.transport.Transport;
import dev.phrony.worker.warmup.WarmUp;
import dev.phrony.worker.warmup.WarmUpBudget;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

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

  @Test
  void a_worker_warms_up_before_it_registers_and_leaves_nothing_of_it() throws Exception {
    Path warmUpState = tmp.resolve("state").resolve("warm-up");
    try (Logged logged = new Logged(WarmUp.class.getName());
        LocalRuntime rt = LocalRuntime.builder().port(0).leaseTtl(Duration.ofSeconds(1)).start()) {
      // Whatever reaches the runtime comes after the warm-up is over and gone.
      List<String> atFirstMessage = new ArrayList<>();
      rt.onEvent(
          e -> {
            synchronized (atFirstMessage) {
              if (atFirstMessage.isEmpty()) {
                atFirstMessage.add(e.type());
                atFirstMessage.add(Files.exists(warmUpState) ? "state left" : "no state");
                atFirstMessage.add(warmUpThreads().isEmpty() ? "no server" : "server left");
              }
            }
          });
      WorkerConfig config =
          config(false, List.of(), Optional.empty(), rt.target(), WarmUpBudget.ofCalls(3_000));
      try (Worker worker = Worker.open(config, NO_ROUTES)) {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        worker.start();
        // The budget, then a trickle while the JIT catches up (5 quiet windows of 100 ms at least).
        assertThat(worker.warmedUp().orElseThrow().calls()).isGreaterThan(3_000L);
        assertThat(worker.warmedUp().orElseThrow().settled())
            .isGreaterThanOrEqualTo(Duration.ofMillis(500));
        // 500 calls a stream (an eighth of the budget, at least 500): registered, served, ended
        // and opened again six times or more, so that its paths are warm too.
        assertThat(worker.warmedUp().orElseThrow().streams()).isGreaterThanOrEqualTo(6);
        // The warm-up's client, outbox and runtime threads end: what is new since is the real
        // client's, one of each kind (its threads start lazily; handler threads are a shared pool).
        Await.until(
            "the warm-up's threads ended",
            () -> {
              List<String> kinds =
                  Thread.getAllStackTraces().keySet().stream()
                      .filter(t -> !before.contains(t) && t.getName().startsWith("phrony-"))
                      .filter(t -> !isHandler(t))
                      .map(t -> t.getName().replaceAll("(-\\d+)+$", ""))
                      .toList();
              return kinds.stream().distinct().count() == kinds.size()
                  && kinds.stream().noneMatch(k -> k.contains("warm-up"));
            });
        Await.until(
            "worker registered", () -> rt.worker(WORKER_ID).filter(w -> w.connected()).isPresent());
        assertThat(rt.dispatchAndWait(Call.of("hello", "1.0.0", "{}")).text()).isEqualTo("w.Hello");

        synchronized (atFirstMessage) {
          assertThat(atFirstMessage).containsExactly("register", "no state", "no server");
        }
        assertThat(rt.events())
            .filteredOn(e -> e.type().equals("invoke"))
            .extracting(e -> e.serverMsg().getInvoke().getTool())
            .containsOnly("hello");
        assertThat(rt.workers()).extracting(w -> w.workerId()).containsExactly(WORKER_ID);
        worker.drain();
      }
      assertThat(logged.messages(Level.ALL))
          .singleElement(as(STRING))
          .matches(
              "warm-up: [0-9]+ calls on [0-9]+ streams in [0-9.]+ s \\([0-9.]+ s of it for the JIT"
                  + " to catch up\\) before registering \\(--warm-up 3000\\)");
    }
  }

  @Test
  void a_failed_warm_up_logs_one_line_and_the_worker_registers() throws Exception {
    try (Logged logged = new Logged(WarmUp.class.getName());
        LocalRuntime rt = LocalRuntime.builder().port(0).leaseTtl(Duration.ofSeconds(1)).start()) {
      WorkerConfig config =
          config(false, List.of(), Optional.empty(), rt.target(), WarmUpBudget.ofCalls(1_000));
      try (Worker worker = Worker.open(config, NO_ROUTES);
          // The warm-up's own state dir already open in this JVM: it cannot open it.
          StateDir held = StateDir.open(config.stateDir().resolve("warm-up"))) {
        servesWithoutWarmUp(worker, rt);
      }
      assertThat(logged.messages(Level.ALL))
          .singleElement(as(STRING))
          .startsWith("warm-up failed, registering without it: state dir ");
    }
  }

  @Test
  void a_warm_up_whose_runtime_cannot_bind_warns_once_and_the_worker_registers() throws Exception {
    try (Logged logged = new Logged("dev.phrony.worker");
        ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        LocalRuntime rt = LocalRuntime.builder().port(0).leaseTtl(Duration.ofSeconds(1)).start()) {
      WorkerConfig config =
          config(false, List.of(), Optional.empty(), rt.target(), WarmUpBudget.ofCalls(300));
      var takenAt = (InetSocketAddress) taken.getLocalSocketAddress();
      try (Worker worker = Worker.open(config, NO_ROUTES, takenAt)) {
        servesWithoutWarmUp(worker, rt); // a failure thrown on would end the test here
      }
      assertThat(logged.messages(Level.WARN))
          .singleElement(as(STRING))
          .startsWith("warm-up failed, registering without it: ")
          .contains(":" + takenAt.getPort());
    }
  }

  /**
   * Starts {@code worker}, whose warm-up fails, and checks that it registers and serves all the
   * same, and that the warm-up left no thread (its I/O thread too, when it started before the
   * failure).
   */
  private static void servesWithoutWarmUp(Worker worker, LocalRuntime rt) throws Exception {
    worker.start();
    assertThat(worker.warmedUp()).get().extracting(WarmUp.Result::ok).isEqualTo(false);
    Await.until(
        "worker registered", () -> rt.worker(WORKER_ID).filter(w -> w.connected()).isPresent());
    assertThat(rt.dispatchAndWait(Call.of("hello", "1.0.0", "{}")).text()).isEqualTo("w.Hello");
    Await.until("no warm-up thread left", () -> warmUpThreads().isEmpty());
    worker.drain();
  }

  @Test
  void the_warm_ups_calls_are_not_in_the_workers_metrics() throws Exception {
    try (Logged logged = new Logged(Worker.class.getName());
        LocalRuntime rt = LocalRuntime.builder().port(0).leaseTtl(Duration.ofSeconds(1)).start()) {
      WorkerConfig config =
          config(
              false,
              List.of(),
              ListenAddress.parse("127.0.0.1:0"),
              rt.target(),
              WarmUpBudget.ofCalls(500));
      try (Worker worker = Worker.open(config, NO_ROUTES)) {
        worker.start();
        assertThat(worker.warmedUp().orElseThrow().calls()).isGreaterThanOrEqualTo(500L);
        Await.until(
            "worker registered", () -> rt.worker(WORKER_ID).filter(w -> w.connected()).isPresent());
        for (int i = 0; i < 3; i++) {
          assertThat(rt.dispatchAndWait(Call.of("hello", "1.0.0", "{}")).text())
              .isEqualTo("w.Hello");
        }
        URI metrics = URI.create(httpEndpoint(logged) + "metrics");
        // An invoke is counted once answered: wait for the 3, then there must be no more.
        Await.until("3 calls counted", () -> invocations(get(metrics)) >= 3);
        String text = get(metrics);
        assertThat(invocations(text)).isEqualTo(3);
        assertThat(text)
            .contains(
                "phrony_worker_invocations_total{code=\"\",outcome=\"result\",tool=\"hello@1.0.0\"} 3")
            .doesNotContain("phrony.warm-up");
        worker.drain();
      }
    }
  }

  /** The worker's HTTP endpoint, as its start line names it. */
  private static String httpEndpoint(Logged logged) {
    Pattern url = Pattern.compile("http endpoint on (http://\\S+/) ");
    return logged.messages(Level.INFO).stream()
        .map(url::matcher)
        .filter(Matcher::find)
        .map(m -> m.group(1))
        .findFirst()
        .orElseThrow();
  }

  private static String get(URI uri) {
    try (HttpClient http = HttpClient.newHttpClient()) {
      HttpResponse<String> r =
          http.send(HttpRequest.newBuilder(uri).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).isEqualTo(200);
      return r.body();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** Every invoke counted, whatever its tool and outcome. */
  private static double invocations(String metrics) {
    return metrics
        .lines()
        .filter(l -> l.startsWith("phrony_worker_invocations_total{"))
        .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1)))
        .sum();
  }

  /** What a logger and those under it log while it is open (the lines stay after). */
  private static final class Logged implements AutoCloseable {
    private final Logger logger;
    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

    Logged(String logger) {
      this.logger = (Logger) LoggerFactory.getLogger(logger);
      appender.start();
      this.logger.addAppender(appender);
    }

    /** The messages logged at {@code level} or above, in order. */
    List<String> messages(Level level) {
      synchronized (appender) { // its appends hold this lock
        return appender.list.stream()
            .filter(e -> e.getLevel().isGreaterOrEqual(level))
            .map(ILoggingEvent::getFormattedMessage)
            .toList();
      }
    }

    @Override
    public void close() {
      logger.detachAppender(appender);
    }
  }

  private static List<String> warmUpThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .map(Thread::getName)
        .filter(n -> n.startsWith("phrony-warm-up"))
        .toList();
  }

  private static boolean isHandler(Thread t) {
    return t.getName().startsWith("phrony-handler") || t.getName().startsWith("call-");
  }

  private WorkerConfig config(
      boolean strict,
      List<HandlerOverrides.Rule> handlers,
      Optional<ListenAddress> http,
      String runtime) {
    return config(strict, handlers, http, runtime, WarmUpBudget.OFF);
  }

  private WorkerConfig config(
      boolean strict,
      List<HandlerOverrides.Rule> handlers,
      Optional<ListenAddress> http,
      String runtime,
      WarmUpBudget warmUp) {
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
        warmUp,
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
