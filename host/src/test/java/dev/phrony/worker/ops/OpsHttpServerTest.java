package dev.phrony.worker.ops;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class OpsHttpServerTest {
  private final HttpClient http = HttpClient.newHttpClient();

  private HttpResponse<String> get(OpsHttpServer server, String path) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.address().getPort() + path))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void serves_metrics_liveness_and_readiness_with_its_reason() throws Exception {
    AtomicReference<Readiness> ready =
        new AtomicReference<>(
            Readiness.notReady("not registered with the runtime at 127.0.0.1:7777"));
    try (OpsHttpServer server =
        OpsHttpServer.start(
            new InetSocketAddress("127.0.0.1", 0), () -> "# HELP x\nx 1\n", ready::get)) {
      var metrics = get(server, "/metrics");
      assertThat(metrics.statusCode()).isEqualTo(200);
      assertThat(metrics.body()).isEqualTo("# HELP x\nx 1\n");
      assertThat(metrics.headers().firstValue("Content-Type"))
          .hasValue("text/plain; version=0.0.4; charset=utf-8");

      assertThat(get(server, "/healthz").statusCode()).isEqualTo(200);
      var notReady = get(server, "/readyz");
      assertThat(notReady.statusCode()).isEqualTo(503);
      assertThat(notReady.body()).isEqualTo("not registered with the runtime at 127.0.0.1:7777\n");

      ready.set(Readiness.READY);
      assertThat(get(server, "/readyz").statusCode()).isEqualTo(200);
      ready.set(Readiness.notReady("draining for shutdown"));
      assertThat(get(server, "/readyz").body()).isEqualTo("draining for shutdown\n");
      assertThat(get(server, "/healthz").statusCode()).isEqualTo(200);

      assertThat(get(server, "/nope").statusCode()).isEqualTo(404);
      var post =
          http.send(
              HttpRequest.newBuilder(
                      URI.create("http://127.0.0.1:" + server.address().getPort() + "/readyz"))
                  .POST(HttpRequest.BodyPublishers.noBody())
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(post.statusCode()).isEqualTo(405);
    }
  }

  @Test
  void serves_the_plugin_routes_get_handlers_and_post_reload_only() throws Exception {
    java.util.concurrent.atomic.AtomicInteger reloads =
        new java.util.concurrent.atomic.AtomicInteger();
    try (OpsHttpServer server =
        OpsHttpServer.start(
            new InetSocketAddress("127.0.0.1", 0),
            () -> "",
            () -> Readiness.READY,
            new OpsHttpServer.Plugins() {
              @Override
              public String handlersJson() {
                return "{\"generation\":2}\n";
              }

              @Override
              public OpsHttpServer.Reply reload() {
                reloads.incrementAndGet();
                return new OpsHttpServer.Reply(409, "{\"outcome\":\"refused\"}\n");
              }
            })) {
      var handlers = get(server, "/handlers");
      assertThat(handlers.statusCode()).isEqualTo(200);
      assertThat(handlers.body()).isEqualTo("{\"generation\":2}\n");
      assertThat(handlers.headers().firstValue("Content-Type")).hasValue("application/json");
      URI reload = URI.create("http://127.0.0.1:" + server.address().getPort() + "/plugins/reload");
      assertThat(
              http.send(
                      HttpRequest.newBuilder(reload).build(), HttpResponse.BodyHandlers.ofString())
                  .statusCode())
          .as("GET does not reload")
          .isEqualTo(405);
      assertThat(reloads).hasValue(0);
      var post =
          http.send(
              HttpRequest.newBuilder(reload).POST(HttpRequest.BodyPublishers.noBody()).build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(post.statusCode()).isEqualTo(409);
      assertThat(post.body()).isEqualTo("{\"outcome\":\"refused\"}\n");
      assertThat(reloads).hasValue(1);
    }
  }

  @Test
  void a_port_in_use_fails_with_a_bind_exception() throws Exception {
    try (OpsHttpServer first =
        OpsHttpServer.start(
            new InetSocketAddress("127.0.0.1", 0), () -> "", () -> Readiness.READY)) {
      assertThatThrownBy(
              () -> OpsHttpServer.start(first.address(), () -> "", () -> Readiness.READY))
          .isInstanceOf(BindException.class);
    }
  }

  @Test
  void listen_addresses_parse() {
    assertThat(ListenAddress.parse("none")).isEmpty();
    assertThat(ListenAddress.parse("127.0.0.1:9464"))
        .contains(new ListenAddress("127.0.0.1", 9464));
    assertThat(ListenAddress.parse("[::1]:9464").orElseThrow().host()).isEqualTo("::1");
    assertThat(ListenAddress.parse("0.0.0.0:0").orElseThrow().port()).isZero();
    assertThatThrownBy(() -> ListenAddress.parse(":9464")).hasMessageContaining("HOST:PORT");
    assertThatThrownBy(() -> ListenAddress.parse("h:99999")).hasMessageContaining("out of range");
  }
}
