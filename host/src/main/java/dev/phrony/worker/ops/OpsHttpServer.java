package dev.phrony.worker.ops;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's HTTP endpoint for probes and scrapes, on the JDK's own HTTP server:
 *
 * <ul>
 *   <li>{@code GET /metrics}: Prometheus text format
 *   <li>{@code GET /healthz}: 200 while the process serves (liveness)
 *   <li>{@code GET /readyz}: 200 while registered with a fresh lease and not draining, else 503
 *       with the reason on one line (readiness)
 *   <li>{@code GET /handlers}: the {@code list-handlers} JSON of what is served now, with its
 *       plugin generation and when it was loaded
 *   <li>{@code POST /plugins/reload}: reloads the plugins folder and answers with the outcome
 * </ul>
 */
public final class OpsHttpServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(OpsHttpServer.class);

  /** Prometheus text exposition format 0.0.4. */
  static final String METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

  private static final String TEXT = "text/plain; charset=utf-8";
  private static final String JSON = "application/json";

  private final HttpServer server;
  private final ExecutorService executor;

  private OpsHttpServer(HttpServer server, ExecutorService executor) {
    this.server = server;
    this.executor = executor;
  }

  /**
   * Binds and starts serving.
   *
   * @param scrape the metrics in Prometheus text format
   * @param readiness whether the worker is ready now
   * @throws java.net.BindException if the address is in use or cannot be bound
   */
  public static OpsHttpServer start(
      InetSocketAddress address, Supplier<String> scrape, Supplier<Readiness> readiness)
      throws IOException {
    return start(address, scrape, readiness, null);
  }

  /** The plugin routes: what is served, and a reload. */
  public interface Plugins {
    /** {@code GET /handlers}: JSON. */
    String handlersJson();

    /** {@code POST /plugins/reload}: reloads, then answers (JSON). */
    Reply reload();
  }

  /** An answer: its HTTP status and JSON body. */
  public record Reply(int status, String json) {}

  /**
   * With the plugin routes ({@code plugins} null: none).
   *
   * @throws java.net.BindException if the address is in use or cannot be bound
   */
  public static OpsHttpServer start(
      InetSocketAddress address,
      Supplier<String> scrape,
      Supplier<Readiness> readiness,
      Plugins plugins)
      throws IOException {
    HttpServer server = HttpServer.create(address, 0);
    ExecutorService executor =
        Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("phrony-http-", 1).factory());
    server.setExecutor(executor);
    server.createContext(
        "/",
        exchange -> {
          try (exchange) {
            String path = exchange.getRequestURI().getPath();
            if (plugins != null && path.equals("/plugins/reload")) {
              if (!exchange.getRequestMethod().equals("POST")) {
                exchange.getResponseHeaders().set("Allow", "POST");
                respond(exchange, 405, TEXT, "method not allowed: POST /plugins/reload\n");
                return;
              }
              Reply r = plugins.reload();
              respond(exchange, r.status(), JSON, r.json());
              return;
            }
            if (!exchange.getRequestMethod().equals("GET")
                && !exchange.getRequestMethod().equals("HEAD")) {
              exchange.getResponseHeaders().set("Allow", "GET, HEAD");
              respond(exchange, 405, TEXT, "method not allowed\n");
              return;
            }
            switch (path) {
              case "/metrics" -> respond(exchange, 200, METRICS_CONTENT_TYPE, scrape.get());
              case "/healthz" -> respond(exchange, 200, TEXT, "ok\n");
              case "/handlers" -> {
                if (plugins == null) {
                  respond(exchange, 404, TEXT, "not found: this process serves no plugins\n");
                } else {
                  respond(exchange, 200, JSON, plugins.handlersJson());
                }
              }
              case "/readyz" -> {
                Readiness r = readiness.get();
                respond(exchange, r.ready() ? 200 : 503, TEXT, r.reason() + "\n");
              }
              default ->
                  respond(
                      exchange,
                      404,
                      TEXT,
                      "not found: try /metrics, /healthz, /readyz, /handlers or POST /plugins/reload\n");
            }
          } catch (RuntimeException e) {
            log.warn("http {} failed", exchange.getRequestURI(), e);
          }
        });
    server.start();
    return new OpsHttpServer(server, executor);
  }

  private static void respond(HttpExchange exchange, int status, String contentType, String body)
      throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", contentType);
    exchange.getResponseHeaders().set("Cache-Control", "no-store");
    boolean head = exchange.getRequestMethod().equals("HEAD");
    exchange.sendResponseHeaders(status, head ? -1 : bytes.length);
    if (!head) {
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(bytes);
      }
    }
  }

  /** The bound address (the real port when 0 was asked for). */
  public InetSocketAddress address() {
    return server.getAddress();
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
