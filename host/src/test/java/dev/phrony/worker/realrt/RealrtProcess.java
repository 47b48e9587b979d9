package dev.phrony.worker.realrt;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.phrony.worker.testkit.Await;
import java.io.IOException;
import java.io.UncheckedIOException;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The runtime's real Work-stream code ({@code ../shared/realrt/bin/realrt}, see its README) as a
 * child process on loopback, driven through its HTTP control API. A clone of the project does not
 * have the binary: {@link #binary()} is then empty and tests that need it skip.
 */
public final class RealrtProcess implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Process process;
  private final Path log;
  private final int grpcPort;
  private final URI control;
  /**
   * One thread for the client's work (its default, a cached pool, grows to dozens of threads
   * under a load of concurrent calls, and takes the CPU the worker under test needs).
   */
  private final java.util.concurrent.ExecutorService httpThread =
      java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "realrt-http");
        t.setDaemon(true);
        return t;
      });
  private final HttpClient http = HttpClient.newBuilder().executor(httpThread)
      .connectTimeout(Duration.ofSeconds(5)).build();

  /**
   * {@code -Dphrony.realrt=PATH}, else {@code shared/realrt/bin/realrt} beside the repository
   * (tests run in a module folder, so {@code ../../shared} from there).
   */
  public static Optional<Path> binary() {
    String given = System.getProperty("phrony.realrt");
    Path p = given != null && !given.isBlank() ? Path.of(given)
        : Path.of("..", "..", "shared", "realrt", "bin", "realrt").toAbsolutePath().normalize();
    return Files.isExecutable(p) ? Optional.of(p) : Optional.empty();
  }

  /** A skip message naming where the binary was looked for. */
  public static String absent() {
    return "realrt not found (../shared/realrt/bin/realrt beside the repository, or"
        + " -Dphrony.realrt=PATH): the real-runtime conformance test is skipped";
  }

  private RealrtProcess(Process process, Path log, int grpcPort, int httpPort) {
    this.process = process;
    this.log = log;
    this.grpcPort = grpcPort;
    this.control = URI.create("http://127.0.0.1:" + httpPort);
  }

  /** Starts {@code binary} with {@code args} on free ports and waits for its control API. */
  public static RealrtProcess start(Path binary, Path logDir, String... args) throws IOException {
    int grpc = freePort();
    int http = freePort();
    List<String> cmd = new ArrayList<>(List.of(binary.toString(),
        "--grpc-addr", "127.0.0.1:" + grpc, "--http-addr", "127.0.0.1:" + http));
    cmd.addAll(List.of(args));
    Path log = logDir.resolve("realrt-" + grpc + ".log");
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
        .redirectOutput(log.toFile()).start();
    RealrtProcess rt = new RealrtProcess(p, log, grpc, http);
    try {
      Await.until("realrt answering GET /healthz on port " + http, () -> {
        if (!p.isAlive()) {
          throw new AssertionError("realrt exited " + p.exitValue());
        }
        try {
          return rt.get("/healthz").path("ok").asBoolean();
        } catch (IOException | RuntimeException e) {
          return false; // not listening yet
        }
      }, Duration.ofSeconds(20));
      return rt;
    } catch (AssertionError e) {
      rt.close();
      throw new IOException("realrt did not start: " + Files.readString(log), e);
    }
  }

  /** The Work stream's {@code host:port}. */
  public String target() {
    return "127.0.0.1:" + grpcPort;
  }

  public JsonNode get(String path) throws IOException {
    return send(HttpRequest.newBuilder(control.resolve(path)).GET().build());
  }

  public JsonNode post(String path, Object body) throws IOException {
    return send(post0(path, body));
  }

  /** The same, answered later: {@code /dispatch} returns when the call is done. */
  public CompletableFuture<JsonNode> postAsync(String path, Object body) {
    return http.sendAsync(post0(path, body), HttpResponse.BodyHandlers.ofByteArray())
        .thenApply(r -> {
          try {
            return JSON.readTree(r.body());
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        });
  }

  private HttpRequest post0(String path, Object body) {
    try {
      return HttpRequest.newBuilder(control.resolve(path))
          .timeout(Duration.ofSeconds(60))
          .POST(HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body))).build();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private JsonNode send(HttpRequest req) throws IOException {
    try {
      HttpResponse<byte[]> r = http.send(req, HttpResponse.BodyHandlers.ofByteArray());
      if (r.statusCode() / 100 != 2) {
        throw new IOException(req.uri() + ": HTTP " + r.statusCode() + " "
            + new String(r.body(), java.nio.charset.StandardCharsets.UTF_8));
      }
      return JSON.readTree(r.body());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
  }

  /** What it printed (for a failing test's message). */
  public String output() {
    try {
      return Files.readString(log);
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  @Override
  public void close() {
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
    http.close();
    httpThread.shutdownNow();
  }
}
