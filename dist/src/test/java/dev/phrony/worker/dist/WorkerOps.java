package dev.phrony.worker.dist;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** What a running worker's ops endpoint and log say about its plugins. */
final class WorkerOps {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private WorkerOps() {}

  /** {@code GET /handlers}, parsed; fails on another status than 200. */
  static JsonNode handlers(int port) throws IOException, InterruptedException {
    HttpResponse<String> r = DistProcess.get(port, "/handlers");
    if (r.statusCode() != 200) {
      throw new AssertionError("GET /handlers answered " + r.statusCode() + ": " + r.body());
    }
    return JSON.readTree(r.body());
  }

  /** The keys {@code GET /handlers} lists. */
  static List<String> keys(JsonNode handlers) {
    List<String> keys = new ArrayList<>();
    handlers.path("handlers").forEach(h -> keys.add(h.path("key").asText()));
    return keys;
  }

  /** The keys {@code GET /handlers} lists now, or an empty list when it does not answer. */
  static List<String> keysNow(int port) {
    try {
      return keys(handlers(port));
    } catch (IOException | AssertionError e) {
      return List.of();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return List.of();
    }
  }

  /** {@code POST /plugins/reload}, parsed. */
  static JsonNode reload(int port) throws IOException, InterruptedException {
    HttpResponse<String> r =
        HTTP.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/plugins/reload"))
                .POST(HttpRequest.BodyPublishers.noBody())
                .timeout(Duration.ofSeconds(30))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    return JSON.readTree(r.body());
  }

  /** The lines of {@code stderr} that report a reload ({@code plugins_reloaded ...}). */
  static List<String> reloadLines(String stderr) {
    return stderr.lines().filter(l -> l.contains("plugins_reloaded")).toList();
  }

  /** Prints one formatted report line for the test output, in one write (loggers share stdout). */
  static void report(String format, Object... args) {
    System.out.print(String.format(format, args));
    System.out.flush();
  }

  /** Milliseconds of the wall clock since {@code nanos}: a real process's latency, reported. */
  static long millisSince(long nanos) {
    return (System.nanoTime() - nanos) / 1_000_000; // wall clock: see above
  }
}
