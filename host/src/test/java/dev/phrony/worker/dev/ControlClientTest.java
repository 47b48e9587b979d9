package dev.phrony.worker.dev;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import dev.phrony.worker.UserErrorException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** {@link ControlClient}: addresses, and every way a control address can fail to be dev. */
class ControlClientTest {

  @Test
  void an_address_is_http_host_and_port_with_the_scheme_optional() {
    assertThat(ControlClient.of("http://127.0.0.1:7778").url()).isEqualTo("http://127.0.0.1:7778");
    assertThat(ControlClient.of("localhost:9000").url()).isEqualTo("http://localhost:9000");
    assertThat(ControlClient.of("http://127.0.0.1:7778/").url()).isEqualTo("http://127.0.0.1:7778");
    for (String bad :
        new String[] {
          "https://127.0.0.1:7778",
          "http://127.0.0.1",
          "http://127.0.0.1:7778/v1",
          "http://exa mple:1"
        }) {
      assertThatThrownBy(() -> ControlClient.of(bad))
          .as(bad)
          .isInstanceOf(UserErrorException.class)
          .hasMessageContaining("control address '" + bad + "'")
          .hasMessageContaining(ControlClient.DEFAULT_URL);
    }
  }

  @Test
  void nothing_listening_says_to_start_dev() throws Exception {
    int port;
    try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      port = probe.getLocalPort();
    }
    ControlClient client = ControlClient.of("http://127.0.0.1:" + port);

    assertThatThrownBy(() -> client.call(CallRequest.of("echo", "{}", null, null)))
        .isInstanceOf(ControlUnreachableException.class)
        .hasMessage(
            "cannot reach phrony-worker dev at http://127.0.0.1:"
                + port
                + " (connection refused): start it with 'bin/phrony-worker dev' in another terminal,"
                + " or give its control address with --control or $PHRONY_WORKER_CONTROL");
  }

  @Test
  void another_kind_of_server_is_not_taken_for_dev_and_a_refusal_is_a_user_error()
      throws Exception {
    HttpServer other =
        HttpServer.create(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0), 0);
    other.createContext(
        "/v1/calls",
        x -> {
          byte[] bytes = "<html>no</html>".getBytes(StandardCharsets.UTF_8);
          x.sendResponseHeaders(404, bytes.length);
          x.getResponseBody().write(bytes);
          x.close();
        });
    other.createContext(
        "/refuse",
        x -> {
          byte[] bytes =
              "{\"error\":{\"code\":\"bad_request\",\"message\":\"tool is required\"}}"
                  .getBytes(StandardCharsets.UTF_8);
          x.sendResponseHeaders(400, bytes.length);
          x.getResponseBody().write(bytes);
          x.close();
        });
    other.start();
    try {
      String url = "http://127.0.0.1:" + other.getAddress().getPort();

      assertThatThrownBy(() -> ControlClient.of(url).call(CallRequest.of("echo", "{}", null, null)))
          .isInstanceOf(ControlUnreachableException.class)
          .hasMessageStartingWith(
              url
                  + " does not look like phrony-worker dev's control address "
                  + "(it answered HTTP 404 without JSON)");
      assertThatThrownBy(() -> ControlClient.of(url).get("/refuse"))
          .isInstanceOfSatisfying(
              ControlRequestException.class,
              e -> {
                assertThat(e.status()).isEqualTo(400);
                assertThat(e.code()).isEqualTo("bad_request");
                assertThat(e.getMessage()).isEqualTo("tool is required");
              });
    } finally {
      other.stop(0);
    }
  }
}
