package dev.phrony.worker.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.testkit.Await;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A runtime binary given with {@code --runtime-bin}: one that serves {@code Runtime.Work} over
 * gRPC and has realrt's HTTP control API ({@code /healthz}, {@code /workers},
 * {@code /dispatch-batch}). Started as a child process on two free loopback ports with no ledger
 * ({@code --recorder none}) and a 30 s lease; the load comes from its own
 * {@code /dispatch-batch}, which dispatches the way the runtime's executor does.
 */
final class RealRuntime implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** What one {@code /dispatch-batch} answered. {@code elapsedMs} is the runtime's own timing. */
  record Batch(long count, long ok, long errors, long dispatchErrors,
      Map<String, Long> errorKinds, double elapsedMs, double p50Ms, double p99Ms,
      double maxMs) {
    /** Calls answered per second of the batch. */
    double perSecond() {
      return ok / (elapsedMs / 1e3);
    }
  }

  private final BinaryProcess process;
  private final int grpcPort;
  private final URI http;
  private final ExecutorService executor;
  private final HttpClient client;

  private RealRuntime(BinaryProcess process, int grpcPort, int httpPort) {
    this.process = process;
    this.grpcPort = grpcPort;
    this.http = URI.create("http://127.0.0.1:" + httpPort);
    // One thread: the client's default pool spins up threads that took a visible share of a
    // 2-core machine's CPU while the runtime and the worker under test needed all of it.
    this.executor = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "realrt-http");
      t.setDaemon(true);
      return t;
    });
    this.client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .executor(executor).connectTimeout(Duration.ofSeconds(5)).build();
  }

  /** Starts {@code bin} and waits until its control API answers. */
  static RealRuntime start(Path bin, Path log, Duration timeout) throws Exception {
    int[] ports = freePorts(2);
    BinaryProcess p = BinaryProcess.start("runtime", List.of(bin.toString(),
        "--grpc-addr", "127.0.0.1:" + ports[0], "--http-addr", "127.0.0.1:" + ports[1],
        "--recorder", "none", "--lease-ttl", "30s"), log);
    RealRuntime rt = new RealRuntime(p, ports[0], ports[1]);
    try {
      boolean up = Await.holds(() -> {
        if (!p.alive()) {
          throw new IllegalStateException("runtime " + bin + " exited at start; its output:\n"
              + p.tail(20));
        }
        return rt.healthy();
      }, timeout);
      if (!up) {
        throw new IllegalStateException("runtime " + bin + ": no answer on " + rt.http
            + "/healthz within " + timeout + "; its output:\n" + p.tail(20));
      }
      return rt;
    } catch (Exception | Error e) {
      rt.close();
      throw e;
    }
  }

  /** Whether {@code /healthz} answers ok; false while it is not listening yet. */
  private boolean healthy() {
    try {
      return get("/healthz").path("ok").asBoolean();
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted waiting for the runtime", e);
    }
  }

  /** Distinct free loopback ports (all held open until all are found). */
  private static int[] freePorts(int n) throws IOException {
    List<ServerSocket> held = new ArrayList<>();
    try {
      int[] ports = new int[n];
      for (int i = 0; i < n; i++) {
        ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        held.add(s);
        ports[i] = s.getLocalPort();
      }
      return ports;
    } finally {
      for (ServerSocket s : held) {
        s.close();
      }
    }
  }

  /** {@code host:port} of its gRPC listener, for a worker's runtime address. */
  String target() {
    return "127.0.0.1:" + grpcPort;
  }

  long pid() {
    return process.pid();
  }

  boolean alive() {
    return process.alive();
  }

  String tail(int lines) {
    return process.tail(lines);
  }

  /**
   * Whether it has {@code n} workers for {@code key} ({@code tool@version}); false when it does
   * not answer; fails when it has exited.
   */
  boolean hasWorkers(String key, int n) {
    if (!alive()) {
      throw new IllegalStateException("the runtime exited; its output:\n" + tail(20));
    }
    try {
      return workerCount(key) == n;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** {@code worker_count} of {@code tool@version} from {@code /workers}; 0 when never seen. */
  int workerCount(String key) throws IOException, InterruptedException {
    return get("/workers").path("tools").path(key).path("worker_count").asInt(0);
  }

  /**
   * {@code count} calls of {@code template} through {@code /dispatch-batch} at
   * {@code concurrency}, results left out of the answer.
   */
  Batch batch(ObjectNode template, long count, int concurrency, String callIdPrefix,
      Duration timeout) throws IOException, InterruptedException {
    ObjectNode body = JSON.createObjectNode();
    body.set("template", template);
    body.put("count", count);
    body.put("concurrency", concurrency);
    body.put("call_id_prefix", callIdPrefix);
    body.put("omit_results", true);
    HttpRequest req = HttpRequest.newBuilder(http.resolve("/dispatch-batch")).timeout(timeout)
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body))).build();
    HttpResponse<String> res = client.send(req, HttpResponse.BodyHandlers.ofString());
    if (res.statusCode() != 200) {
      throw new IOException("/dispatch-batch answered " + res.statusCode() + ": " + res.body());
    }
    JsonNode j = JSON.readTree(res.body());
    Map<String, Long> kinds = new LinkedHashMap<>();
    j.path("dispatch_error_kind_counts").properties()
        .forEach(e -> kinds.put(e.getKey(), e.getValue().asLong()));
    JsonNode lat = j.path("latency_ms");
    return new Batch(j.path("count").asLong(), j.path("ok").asLong(), j.path("errors").asLong(),
        j.path("dispatch_errors").asLong(), kinds, j.path("elapsed_ms").asDouble(),
        lat.path("p50").asDouble(Double.NaN), lat.path("p99").asDouble(Double.NaN),
        lat.path("max").asDouble(Double.NaN));
  }

  /** A {@code /dispatch-batch} template: one {@code read_only} call of {@code tool@version}. */
  static ObjectNode template(String session, String tool, String version, byte[] args)
      throws IOException {
    ObjectNode t = JSON.createObjectNode();
    t.put("session_id", session);
    t.put("tool", tool);
    t.put("version", version);
    t.put("side_effect_class", "read_only");
    t.set("args", JSON.readTree(args));
    return t;
  }

  private JsonNode get(String path) throws IOException, InterruptedException {
    HttpRequest req = HttpRequest.newBuilder(http.resolve(path)).timeout(Duration.ofSeconds(5))
        .GET().build();
    HttpResponse<String> res = client.send(req, HttpResponse.BodyHandlers.ofString());
    if (res.statusCode() != 200) {
      throw new IOException(path + " answered " + res.statusCode() + ": " + res.body());
    }
    return JSON.readTree(res.body());
  }

  /** SIGTERM (the runtime's own shutdown), SIGKILL after 10 s. */
  @Override
  public void close() throws InterruptedException {
    try {
      process.close();
    } finally {
      client.close();
      executor.shutdownNow();
    }
  }
}
