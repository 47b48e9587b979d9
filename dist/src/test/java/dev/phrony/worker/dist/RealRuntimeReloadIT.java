package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.testkit.Await;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link PluginReloadIT}'s scenario against the real runtime's Work-stream code
 * ({@code ../shared/realrt/bin/realrt}, see its README), which a clone of the project does not
 * have: skipped when it is absent.
 */
class RealRuntimeReloadIT {
  private static final Duration TTL = PluginReloadIT.TTL;
  private static final String WORKER = "rreload-1";
  private static final String ECHO = PluginReloadIT.ECHO;
  private static final String ANSWER = PluginReloadIT.ANSWER;
  private static final String FRESH = PluginReloadIT.FRESH;
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir
  Path tmp;

  /** One answer of realrt's {@code POST /dispatch}. */
  record Answer(String callId, JsonNode body) {
    boolean ok() {
      return body.path("error").isNull() && body.path("dispatch_error").isNull()
          && body.has("payload") && !body.path("payload").isNull();
    }

    /** The payload as compact JSON text. */
    String payload() {
      return body.path("payload").toString();
    }

    @Override
    public String toString() {
      return "Answer[" + callId + " " + body + "]";
    }
  }

  /** realrt as a child process, with its HTTP control API. */
  static final class RealRuntime implements AutoCloseable {
    final int grpcPort;
    final int httpPort;
    final Process process;
    final Path err;
    final ExecutorService httpThread = Executors.newSingleThreadExecutor();
    final HttpClient http = HttpClient.newBuilder().executor(httpThread)
        .version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5)).build();
    private final AtomicLong ids = new AtomicLong();

    RealRuntime(Path binary, Path dir) throws IOException {
      grpcPort = DistProcess.freePort();
      httpPort = DistProcess.freePort();
      err = dir.resolve("realrt.stderr.txt");
      process = new ProcessBuilder(binary.toString(),
          "--grpc-addr", "127.0.0.1:" + grpcPort, "--http-addr", "127.0.0.1:" + httpPort,
          "--lease-ttl", TTL.toSeconds() + "s", "--recorder", "memory")
          .redirectErrorStream(true).redirectOutput(err.toFile()).start();
    }

    String target() {
      return "127.0.0.1:" + grpcPort;
    }

    String stderr() {
      try {
        return Files.readString(err);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    CompletableFuture<HttpResponse<String>> send(String method, String path, String body) {
      return http.sendAsync(HttpRequest.newBuilder(
              URI.create("http://127.0.0.1:" + httpPort + path))
          .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
              : HttpRequest.BodyPublishers.ofString(body))
          .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
    }

    JsonNode get(String path) throws Exception {
      return JSON.readTree(send("GET", path, null).get(30, TimeUnit.SECONDS).body());
    }

    boolean healthy() {
      try {
        return send("GET", "/healthz", null).get(5, TimeUnit.SECONDS).statusCode() == 200;
      } catch (Exception e) {
        return false;
      }
    }

    /** {@code POST /dispatch} of {@code key} with {@code {"sleep_ms":20}}. */
    CompletableFuture<Answer> dispatch(String key, long timeoutMs) {
      int at = key.indexOf('@');
      String callId = "rr-" + ids.incrementAndGet();
      ObjectNode req = JSON.createObjectNode()
          .put("call_id", callId).put("session_id", "s-rreload")
          .put("tool", key.substring(0, at)).put("version", key.substring(at + 1));
      req.putObject("args").put("sleep_ms", 20);
      if (timeoutMs > 0) {
        req.put("timeout_ms", timeoutMs);
      }
      return send("POST", "/dispatch", req.toString()).thenApply(r -> {
        try {
          return new Answer(callId, JSON.readTree(r.body()));
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      });
    }

    CompletableFuture<Answer> dispatch(String key) {
      return dispatch(key, 0);
    }

    Answer dispatchAndWait(String key) throws Exception {
      return dispatch(key).get(30, TimeUnit.SECONDS);
    }

    long registers() throws Exception {
      return get("/events?type=recv&kind=register&limit=100000").size();
    }

    int openStreams() {
      try {
        return get("/healthz").path("open_streams").asInt(-1);
      } catch (Exception e) {
        return -1;
      }
    }

    @Override
    public void close() throws InterruptedException {
      httpThread.shutdownNow();
      if (process.isAlive()) {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
          process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
      }
    }
  }

  @Test
  void jars_copied_in_and_replaced_under_load_are_served_live_by_the_real_runtime()
      throws Exception {
    Path binary = Path.of("").toAbsolutePath().resolve("../../shared/realrt/bin/realrt")
        .normalize();
    Assumptions.assumeTrue(Files.isExecutable(binary),
        binary + ": the real runtime (realrt) absent: skipped");

    PluginReloadIT.Jars jars = PluginReloadIT.Jars.build(tmp);
    Path plugins = PluginReloadIT.pluginsFolder(tmp, jars);
    try (RealRuntime rt = new RealRuntime(binary, tmp)) {
      Await.until("realrt answers; its output:\n" + rt.stderr(), rt::healthy,
          Duration.ofSeconds(20));
      try (DistProcess worker = DistProcess.start(tmp, Map.of("PHRONY_RUNTIME_ADDR", rt.target()),
              "run", "--plugins", plugins.toString(), "--http", "127.0.0.1:0",
              "--state-dir", tmp.resolve("state").toString(), "--worker-id", WORKER,
              "--drain-timeout", "30s");
          LoadDriver<Answer> load = new LoadDriver<>("realrt-load", 8, List.of(ECHO, ANSWER),
              rt::dispatch)) {
        worker.awaitStderr("registered as " + WORKER, DistProcess.DEADLINE);
        int port = worker.httpPort();
        int generation0 = WorkerOps.handlers(port).path("generation").asInt();
        Answer first = rt.dispatchAndWait(ANSWER);
        assertThat(first.ok()).as("%s; worker stderr:%n%s", first, worker.stderr()).isTrue();
        assertThat(first.payload()).isEqualTo(PluginReloadIT.OLD);

        load.start();
        Await.until("load running", () -> load.done().size() >= 50, Duration.ofSeconds(20));

        // (a) copied in atomically: served within 2 s. Latencies of a real process are measured
        // on the wall clock, the clock the promise is made in, as the load's records are.
        GeneratedPlugins.deployAtomically(jars.fresh(), plugins, "tool-fresh.jar");
        long movedAt = System.nanoTime(); // wall clock: see above
        List<LoadDriver.Rec<Answer>> probes;
        try (LoadDriver<Answer> prober = new LoadDriver<>("realrt-probe", 1, List.of(FRESH),
            rt::dispatch).start()) {
          worker.until("a call of " + FRESH + " answered", () -> prober.done().stream()
              .anyMatch(r -> r.outcome() != null && r.outcome().ok()), Duration.ofSeconds(15));
          probes = prober.stop(Duration.ofSeconds(30));
        }
        long servedMs = (probes.stream().filter(r -> r.outcome() != null && r.outcome().ok())
            .mapToLong(LoadDriver.Rec::doneNanos).min().orElseThrow() - movedAt) / 1_000_000;
        WorkerOps.report("RealRuntimeReloadIT: copy -> served %d ms (%d probe dispatches)%n",
            servedMs, probes.size());
        assertThat(servedMs).as("ms from the atomic move of tool-fresh.jar to its first result;"
                + " worker stderr:%n%s", worker.stderr())
            .isBetween(0L, PluginReloadIT.SERVED_WITHIN.toMillis());
        for (LoadDriver.Rec<Answer> probe : probes) {
          assertThat(probe.outcome()).as("probe %s", probe).isNotNull();
          assertThat(probe.outcome().ok()).as("probe %s", probe).isTrue();
          assertThat(probe.outcome().payload()).isEqualTo(PluginReloadIT.FRESH_ANSWER);
        }
        JsonNode afterA = WorkerOps.handlers(port);
        int generationA = afterA.path("generation").asInt();
        assertThat(generationA).as("%s", afterA).isGreaterThan(1).isGreaterThan(generation0);
        assertThat(WorkerOps.keys(afterA)).containsExactlyInAnyOrder(ECHO, ANSWER, FRESH);
        load.add(FRESH);

        // (b) new code, same descriptor: new answers, no register on the wire.
        long registersBefore = rt.registers();
        GeneratedPlugins.deployAtomically(jars.newA(), plugins, "tool-a.jar");
        long replacedAt = System.nanoTime(); // wall clock: the promises below count from here
        AtomicLong firstNewAt = new AtomicLong(-1);
        worker.until("the new code of tool-a.jar answers", () -> {
          if (rt.dispatch(ANSWER).orTimeout(30, TimeUnit.SECONDS).join().payload()
              .equals(PluginReloadIT.NEW)) {
            firstNewAt.set(System.nanoTime()); // wall clock: reported
            return true;
          }
          return false;
        }, Duration.ofSeconds(15));
        WorkerOps.report("RealRuntimeReloadIT: replace -> first new answer %d ms%n",
            (firstNewAt.get() - replacedAt) / 1_000_000);
        // The promise is about the time after one lease TTL of the wall clock from the
        // replacement (the runtime's lease, a real process's heartbeats): that time passing is
        // what is waited for, not a guess at how long something takes.
        Await.until("one lease TTL since the replacement",
            () -> System.nanoTime() - replacedAt >= TTL.toNanos(), TTL.plusSeconds(1));
        List<CompletableFuture<Answer>> handful = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
          handful.add(rt.dispatch(ANSWER));
        }
        for (CompletableFuture<Answer> f : handful) {
          Answer a = f.get(30, TimeUnit.SECONDS);
          assertThat(a.ok()).as("%s", a).isTrue();
          assertThat(a.payload()).as("an answer a lease TTL after the replacement: %s", a)
              .isEqualTo(PluginReloadIT.NEW);
        }
        assertThat(WorkerOps.handlers(port).path("generation").asInt()).isEqualTo(generationA);
        assertThat(rt.registers()).as("registers since the code-only replacement")
            .isEqualTo(registersBefore);

        // (c) removed: gone from /handlers within a TTL + 1 s, then out of routing.
        load.remove(FRESH);
        Files.delete(plugins.resolve("tool-fresh.jar"));
        long removedAt = System.nanoTime(); // wall clock: the promises below count from here
        Await.until("GET /handlers without " + FRESH,
            () -> !WorkerOps.keysNow(port).contains(FRESH), TTL.plusSeconds(1));
        WorkerOps.report("RealRuntimeReloadIT: remove -> gone from /handlers %d ms%n",
            WorkerOps.millisSince(removedAt));
        // Out of routing a lease TTL + 3 s of the wall clock after the removal at the latest.
        AtomicReference<Answer> last = new AtomicReference<>();
        worker.until("a call of " + FRESH + " refused (out of routing)", () -> {
          last.set(rt.dispatch(FRESH, 300).orTimeout(30, TimeUnit.SECONDS).join());
          return !last.get().ok();
        }, TTL.plusSeconds(3).minus(Duration.ofNanos(System.nanoTime() - removedAt)));
        WorkerOps.report("RealRuntimeReloadIT: remove -> out of routing %d ms (%s)%n",
            WorkerOps.millisSince(removedAt), last.get());
        Await.until("only one stream open at the runtime (open_streams "
            + rt.openStreams() + ")", () -> rt.openStreams() == 1, TTL.plusSeconds(5));

        List<LoadDriver.Rec<Answer>> recs = load.stop(Duration.ofSeconds(30));
        WorkerOps.report("RealRuntimeReloadIT: load %d calls %s%n", recs.size(),
            LoadDriver.perKey(recs));
        assertThat(LoadDriver.first(recs, r -> r.outcome() == null || !r.outcome().ok(), 20))
            .as("calls of the load without a result (of %d); worker stderr:%n%s%nrealrt:%n%s",
                recs.size(), worker.stderr(), rt.stderr())
            .isEmpty();
        long ttlAfterReplace = replacedAt + TTL.toNanos();
        assertThat(LoadDriver.first(recs, r -> r.key().equals(ANSWER)
                && r.sentNanos() >= ttlAfterReplace
                && !r.outcome().payload().equals(PluginReloadIT.NEW), 20))
            .as("load calls of %s a lease TTL after the replacement", ANSWER).isEmpty();
        List<String> reloads = WorkerOps.reloadLines(worker.stderr());
        WorkerOps.report("RealRuntimeReloadIT: reload lines:%n  %s%n",
            String.join("\n  ", reloads));
        assertThat(reloads).as("one line per reload").hasSize(3);

        worker.terminate();
        DistProcess.Result exit = worker.awaitExit(Duration.ofSeconds(30));
        assertThat(exit.exit()).as("exit status; stderr:%n%s", exit.err()).isZero();
        assertThat(exit.err()).contains("drained");
      }
    }
  }
}
