package dev.phrony.worker.testkit.realrt;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.util.RawValue;
import dev.phrony.worker.testkit.Await;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The Phrony runtime's own Work-stream code as a child process: {@code realrt}, a binary that
 * serves {@code Runtime.Work} over gRPC with the runtime's real registry and dispatcher, and adds
 * an HTTP control API to dispatch calls the way the runtime's executor does, cancel sessions, and
 * read every message of every stream (see the binary's own README for its flags and endpoints).
 * {@link #start} runs it on two free loopback ports with the given flags and returns once {@code
 * GET /healthz} answers; {@link #close} stops it.
 *
 * <p>The binary is not part of the project, so a clone does not have it: a test that uses it looks
 * it up with {@link #binary()} and skips, with {@link #absent()} as the reason, when it is not
 * there. No test that CI or a user runs may require it. The bench is given its path instead.
 */
public final class RealRuntime implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** For the requests that poll (health, worker counts): a hung answer is a failed poll. */
  private static final Duration POLL_TIMEOUT = Duration.ofSeconds(5);

  private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(60);

  /**
   * One call as the control API takes it ({@code POST /dispatch}, or the template of a {@code
   * /dispatch-batch}): {@code callId} null in a template, {@code sideEffectClass} null for the
   * runtime's default, {@code argsJson} the arguments as JSON text, {@code timeoutMs} 0 for the
   * executor's default dispatch bound (10 s).
   */
  public record ToolCall(
      String callId,
      String sessionId,
      String tool,
      String version,
      String sideEffectClass,
      String argsJson,
      long timeoutMs) {
    /** A call of {@code key} ({@code tool@version}) in {@code sessionId}, without a call id. */
    public static ToolCall of(String sessionId, String key, String argsJson) {
      int at = key.indexOf('@');
      if (at < 0) {
        throw new IllegalArgumentException("a key is tool@version, not " + key);
      }
      return new ToolCall(
          null, sessionId, key.substring(0, at), key.substring(at + 1), null, argsJson, 0);
    }

    public ToolCall withCallId(String id) {
      return new ToolCall(id, sessionId, tool, version, sideEffectClass, argsJson, timeoutMs);
    }

    public ToolCall withSideEffectClass(String c) {
      return new ToolCall(callId, sessionId, tool, version, c, argsJson, timeoutMs);
    }

    public ToolCall withTimeoutMs(long ms) {
      return new ToolCall(callId, sessionId, tool, version, sideEffectClass, argsJson, ms);
    }

    ObjectNode json() {
      ObjectNode n = JSON.createObjectNode();
      if (callId != null) {
        n.put("call_id", callId);
      }
      n.put("session_id", sessionId).put("tool", tool).put("version", version);
      if (sideEffectClass != null) {
        n.put("side_effect_class", sideEffectClass);
      }
      n.putRawValue("args", new RawValue(argsJson));
      if (timeoutMs > 0) {
        n.put("timeout_ms", timeoutMs);
      }
      return n;
    }
  }

  /** What {@code POST /dispatch} answered for {@code callId}. */
  public record Answer(String callId, JsonNode body) {
    /** A result from a worker: no tool error, no dispatch error. */
    public boolean ok() {
      return body.path("error").isNull()
          && body.path("dispatch_error").isNull()
          && body.has("payload")
          && !body.path("payload").isNull();
    }

    /** The payload as compact JSON text. */
    public String payload() {
      return body.path("payload").toString();
    }

    @Override
    public String toString() {
      return "Answer[" + callId + " " + body + "]";
    }
  }

  /** What one {@code /dispatch-batch} answered. {@code elapsedMs} is the runtime's own timing. */
  public record Batch(
      long count,
      long ok,
      long errors,
      long dispatchErrors,
      Map<String, Long> errorKinds,
      double elapsedMs,
      double p50Ms,
      double p99Ms,
      double maxMs) {
    /** Calls answered per second of the batch. */
    public double perSecond() {
      return ok / (elapsedMs / 1e3);
    }
  }

  private final Process process;
  private final Path log;
  private final int grpcPort;
  private final URI control;

  /**
   * One thread for the client's work: its default pool grows to dozens of threads under a load of
   * concurrent calls, and took a visible share of a 2-core machine's CPU while the runtime and the
   * worker under test needed all of it.
   */
  private final ExecutorService httpThread =
      Executors.newSingleThreadExecutor(
          r -> {
            Thread t = new Thread(r, "realrt-http");
            t.setDaemon(true);
            return t;
          });

  private final HttpClient http =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .executor(httpThread)
          .connectTimeout(Duration.ofSeconds(5))
          .build();

  private RealRuntime(Process process, Path log, int grpcPort, int httpPort) {
    this.process = process;
    this.log = log;
    this.grpcPort = grpcPort;
    this.control = URI.create("http://127.0.0.1:" + httpPort);
  }

  /**
   * {@code -Dphrony.realrt=PATH}, else the team's copy of the binary in the folder that holds the
   * checkout (tests run in a module folder, two levels below it); empty when it is not an
   * executable file.
   */
  public static Optional<Path> binary() {
    Path p = lookedAt();
    return Files.isExecutable(p) ? Optional.of(p) : Optional.empty();
  }

  /** Why a test that needs the binary skips: where it was looked for. */
  public static String absent() {
    return "realrt not found at "
        + lookedAt()
        + " (give it with -Dphrony.realrt=PATH): the"
        + " test against the real runtime is skipped";
  }

  private static Path lookedAt() {
    String given = System.getProperty("phrony.realrt");
    return given != null && !given.isBlank()
        ? Path.of(given)
        : Path.of("..", "..", "shared", "realrt", "bin", "realrt").toAbsolutePath().normalize();
  }

  /**
   * Starts {@code binary} with {@code flags} (e.g. {@code --lease-ttl 4s --recorder memory}) on two
   * free loopback ports, its output in {@code log}, and waits up to {@code timeout} for its control
   * API; fails, with its output, when it exits first or does not answer in time.
   */
  public static RealRuntime start(Path binary, Path log, Duration timeout, String... flags)
      throws IOException {
    int[] ports = freePorts(2);
    List<String> cmd =
        new ArrayList<>(
            List.of(
                binary.toString(),
                "--grpc-addr",
                "127.0.0.1:" + ports[0],
                "--http-addr",
                "127.0.0.1:" + ports[1]));
    cmd.addAll(List.of(flags));
    Files.createDirectories(log.toAbsolutePath().getParent());
    Process p =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    RealRuntime rt = new RealRuntime(p, log, ports[0], ports[1]);
    try {
      boolean up =
          Await.holds(
              () -> {
                if (!p.isAlive()) {
                  throw new IllegalStateException(
                      binary + " exited at start; its output:\n" + rt.tail(20));
                }
                return rt.healthy();
              },
              timeout,
              Duration.ofMillis(10));
      if (!up) {
        throw new IllegalStateException(
            binary
                + ": no answer on "
                + rt.control
                + "/healthz"
                + " within "
                + timeout
                + "; its output:\n"
                + rt.tail(20));
      }
      return rt;
    } catch (RuntimeException | Error e) {
      rt.close();
      throw e;
    }
  }

  /**
   * Starts the Go peer worker that sits beside {@code binary} ({@code testworker}) against this
   * runtime as {@code workerId}, serving {@code key} ({@code tool@version}) with 64 slots and
   * {@code flags} (e.g. {@code --on-cancel drop --reconnect}), its output in {@code log}. The
   * caller destroys it.
   */
  public Process startPeer(Path binary, String workerId, String key, Path log, String... flags)
      throws IOException {
    int at = key.lastIndexOf('@');
    List<String> cmd =
        new ArrayList<>(
            List.of(
                binary.resolveSibling("testworker").toString(),
                "--addr",
                target(),
                "--worker-id",
                workerId,
                "--tool",
                key.substring(0, at),
                "--version",
                key.substring(at + 1),
                "--max-concurrency",
                "64"));
    cmd.addAll(List.of(flags));
    return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
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

  /** {@code host:port} of its Work listener, for a worker's runtime address. */
  public String target() {
    return "127.0.0.1:" + grpcPort;
  }

  public long pid() {
    return process.pid();
  }

  public boolean alive() {
    return process.isAlive();
  }

  /** All it printed, for a failing test's message. */
  public String output() {
    try {
      return Files.readString(log);
    } catch (IOException | RuntimeException e) {
      return "(" + log + " unreadable: " + e + ")";
    }
  }

  /** The last {@code n} lines it printed. */
  public String tail(int n) {
    List<String> lines = output().lines().toList();
    return String.join("\n", lines.subList(Math.max(0, lines.size() - n), lines.size()));
  }

  /** Whether {@code GET /healthz} answers ok; false while it is not listening (yet). */
  private boolean healthy() {
    try {
      return get("/healthz", POLL_TIMEOUT).path("ok").asBoolean();
    } catch (InterruptedIOException e) {
      throw new IllegalStateException("interrupted waiting for realrt", e);
    } catch (IOException e) {
      return false;
    }
  }

  /** {@code GET /healthz}'s {@code open_streams}: the Work streams open now. */
  public int openStreams() throws IOException {
    return get("/healthz", POLL_TIMEOUT).path("open_streams").asInt();
  }

  /** {@code worker_count} of {@code key} ({@code tool@version}) in {@code /workers}; 0 if none. */
  public int workerCount(String key) throws IOException {
    return get("/workers", POLL_TIMEOUT).path("tools").path(key).path("worker_count").asInt(0);
  }

  /**
   * Whether it has {@code n} workers for {@code key}: a condition to wait on, so false when it does
   * not answer; fails when it has exited.
   */
  public boolean hasWorkers(String key, int n) {
    if (!alive()) {
      throw new IllegalStateException("realrt exited; its output:\n" + tail(20));
    }
    try {
      return workerCount(key) == n;
    } catch (InterruptedIOException e) {
      throw new IllegalStateException("interrupted asking realrt for its workers", e);
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * {@code GET /events?QUERY}: every message of every stream it kept that the query selects (e.g.
   * {@code type=recv&kind=register}), oldest first.
   */
  public JsonNode events(String query) throws IOException {
    return get("/events?" + query, REQUEST_TIMEOUT);
  }

  /** {@code POST /events/reset}: forgets the events so far. */
  public void resetEvents() throws IOException {
    send(post("/events/reset", JSON.createObjectNode(), REQUEST_TIMEOUT));
  }

  /** Whether a stream on which {@code workerId} registered is still open (from its events). */
  public boolean connected(String workerId) throws IOException {
    Set<Long> open = new HashSet<>();
    String who = "&worker_id=" + workerId + "&limit=1000000";
    events("type=recv&kind=register" + who).forEach(e -> open.add(e.path("stream_id").asLong()));
    events("type=stream_close" + who).forEach(e -> open.remove(e.path("stream_id").asLong()));
    return !open.isEmpty();
  }

  /**
   * {@code POST /dispatch} of {@code call} (which has a call id), answered when the runtime has the
   * call's outcome: what its executor does.
   */
  public CompletableFuture<Answer> dispatch(ToolCall call) {
    String callId = Objects.requireNonNull(call.callId(), "a dispatched call needs a call id");
    return sendAsync(post("/dispatch", call.json(), REQUEST_TIMEOUT))
        .thenApply(body -> new Answer(callId, body));
  }

  /**
   * {@code count} calls of {@code template} through {@code /dispatch-batch} at {@code concurrency},
   * call ids {@code callIdPrefix + n}, results left out of the answer.
   */
  public Batch dispatchBatch(
      ToolCall template, long count, int concurrency, String callIdPrefix, Duration timeout)
      throws IOException {
    ObjectNode body = JSON.createObjectNode();
    body.set("template", template.json());
    body.put("count", count);
    body.put("concurrency", concurrency);
    body.put("call_id_prefix", callIdPrefix);
    body.put("omit_results", true);
    JsonNode j = send(post("/dispatch-batch", body, timeout));
    Map<String, Long> kinds = new LinkedHashMap<>();
    j.path("dispatch_error_kind_counts")
        .properties()
        .forEach(e -> kinds.put(e.getKey(), e.getValue().asLong()));
    JsonNode lat = j.path("latency_ms");
    return new Batch(
        j.path("count").asLong(),
        j.path("ok").asLong(),
        j.path("errors").asLong(),
        j.path("dispatch_errors").asLong(),
        kinds,
        j.path("elapsed_ms").asDouble(),
        lat.path("p50").asDouble(Double.NaN),
        lat.path("p99").asDouble(Double.NaN),
        lat.path("max").asDouble(Double.NaN));
  }

  /**
   * {@code POST /cancel-session} in {@code mode}: {@code runtime} (the session's context, as a
   * run's cancellation), {@code registry} ({@code WorkerRegistry.CancelSession}) or {@code rpc}
   * (both, as the runtime's CancelSession RPC).
   */
  public CompletableFuture<JsonNode> cancelSession(String sessionId, String mode) {
    return sendAsync(
        post(
            "/cancel-session",
            JSON.createObjectNode().put("session_id", sessionId).put("mode", mode),
            REQUEST_TIMEOUT));
  }

  private JsonNode get(String path, Duration timeout) throws IOException {
    return send(HttpRequest.newBuilder(control.resolve(path)).timeout(timeout).GET().build());
  }

  private HttpRequest post(String path, JsonNode body, Duration timeout) {
    try {
      return HttpRequest.newBuilder(control.resolve(path))
          .timeout(timeout)
          .header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body)))
          .build();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private JsonNode send(HttpRequest req) throws IOException {
    try {
      return parse(req, http.send(req, HttpResponse.BodyHandlers.ofByteArray()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException(req.uri() + ": interrupted");
    }
  }

  private CompletableFuture<JsonNode> sendAsync(HttpRequest req) {
    return http.sendAsync(req, HttpResponse.BodyHandlers.ofByteArray())
        .thenApply(
            r -> {
              try {
                return parse(req, r);
              } catch (IOException e) {
                throw new UncheckedIOException(e);
              }
            });
  }

  private static JsonNode parse(HttpRequest req, HttpResponse<byte[]> r) throws IOException {
    if (r.statusCode() != 200) {
      throw new IOException(
          req.method()
              + " "
              + req.uri().getPath()
              + " answered "
              + r.statusCode()
              + ": "
              + new String(r.body(), StandardCharsets.UTF_8));
    }
    return JSON.readTree(r.body());
  }

  /** SIGTERM (the runtime's own shutdown), SIGKILL after 10 s. */
  @Override
  public void close() {
    try {
      if (process.isAlive()) {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
          process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    } finally {
      http.shutdownNow();
      httpThread.shutdownNow();
    }
  }
}
