package dev.phrony.worker.dev;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.work.WorkClient;
import dev.phrony.worker.work.WorkOptions;
import dev.phrony.worker.work.WorkerIdentity;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** {@link DevServer}: wiring, banner, the external-worker mode, ports in use, stopping. */
class DevServerTest {

  @Test
  void the_banner_names_both_addresses_the_handlers_and_a_call_line_that_works() {
    try (DevServer dev = DevFixture.start()) {
      String banner = dev.banner();

      assertThat(banner)
          .contains("  runtime  " + dev.runtimeTarget())
          .contains("  control  " + dev.controlUrl())
          .contains("  worker   " + DevFixture.WORKER_ID + " serving 4 handlers from test-plugins")
          .contains("echo@1.0.0    echo for tests")
          .contains("text@default  text for tests")
          .contains(
              "  bin/phrony-worker call echo@1.0.0 '{}' --runtime " + dev.runtimeTarget() + "\n")
          .doesNotContain("not registered");
      ExampleCall shown = new ExampleCall("echo@1.0.0", "{}");
      CallReply reply =
          CallClient.of(dev.runtimeTarget())
              .call(CallRequest.of(shown.key(), shown.args(), null, null), held -> {});
      assertThat(reply.kind()).isEqualTo(CallReply.Kind.RESULT);
    }
  }

  @Test
  void without_a_host_a_worker_connected_from_outside_serves_the_calls_and_is_shown() {
    StringWriter console = new StringWriter();
    try (DevServer dev = DevFixture.startWithoutHost()) {
      dev.showEvents(new PrintWriter(console, true));
      assertThat(dev.host()).isEmpty();
      assertThat(dev.banner())
          .contains("worker   none (--no-host)")
          .contains("bin/phrony-worker run --runtime " + dev.runtimeTarget())
          .contains("bin/phrony-worker call TOOL@VERSION '{}' --runtime " + dev.runtimeTarget());

      try (WorkClient outside =
          new WorkClient(
              WorkOptions.defaults(dev.runtimeTarget(), new WorkerIdentity("outside-1", "", "")),
              DevFixture.catalog(),
              new MemoryOutbox())) {
        outside.start();
        Await.until("outside worker registered", outside::registered);

        CallReply reply =
            ControlClient.of(dev.controlUrl())
                .call(CallRequest.of("echo@1.0.0", "{\"from\":\"outside\"}", null, null));

        assertThat(reply.kind()).isEqualTo(CallReply.Kind.RESULT);
        assertThat(reply.json().path("worker_id").asText()).isEqualTo("outside-1");
      }
      Await.until("disconnect shown", () -> console.toString().contains("worker_disconnected"));
    }
    assertThat(console.toString())
        .containsPattern(
            "worker_registered   worker_id=outside-1 "
                + "handlers=echo@1.0.0,fail@1.0.0,hold@1.0.0,text@default")
        .containsPattern("tool_call   call_id=\\S+ tool=echo@1.0.0 args=18B")
        .containsPattern("tool_result call_id=\\S+ outcome=result size=18B worker=outside-1 ")
        .containsPattern("worker_disconnected worker_id=outside-1 status=");
  }

  @Test
  void a_busy_runtime_port_is_reported_at_once_as_such() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      int port = taken.getLocalPort();
      // Reported by the first bind (only a runtime's restart retries a port it just released).
      assertThatThrownBy(() -> DevServer.start(new DevServer.Options(port, 0, Optional.empty())))
          .isInstanceOfSatisfying(
              DevServer.PortInUseException.class,
              e -> {
                assertThat(e.listener()).isEqualTo(DevServer.Listener.RUNTIME);
                assertThat(e.port()).isEqualTo(port);
                assertThat(e.getMessage()).isEqualTo("the runtime's port " + port + " is in use");
              });
    }
  }

  @Test
  void a_busy_control_port_is_reported_and_the_runtime_started_before_it_is_closed()
      throws Exception {
    int runtimePort;
    try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      runtimePort = free.getLocalPort();
    }
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      int port = taken.getLocalPort();

      assertThatThrownBy(
              () -> DevServer.start(new DevServer.Options(runtimePort, port, Optional.empty())))
          .isInstanceOfSatisfying(
              DevServer.PortInUseException.class,
              e -> {
                assertThat(e.listener()).isEqualTo(DevServer.Listener.CONTROL);
                assertThat(e.getMessage()).isEqualTo("the control port " + port + " is in use");
              });
    }
    // The runtime's port was released: it can be bound again. Awaited, not tried once: NIO
    // closes a socket registered with a selector only at that selector's next wake-up, which may
    // come just after the close has returned (this failed about one run in fifteen).
    Await.until(
        "the runtime's port " + runtimePort + " free to bind again",
        () -> canBind(runtimePort),
        Duration.ofSeconds(5));
  }

  private static boolean canBind(int port) {
    try (ServerSocket again = new ServerSocket(port, 1, InetAddress.getByName("127.0.0.1"))) {
      return again.getLocalPort() == port;
    } catch (IOException e) {
      return false;
    }
  }

  @Test
  void stop_drains_the_host_then_closes_the_runtime_and_the_control_api() throws Exception {
    DevServer dev = DevFixture.start();
    ControlClient client = ControlClient.of(dev.controlUrl());
    assertThat(client.call(CallRequest.of("echo@1.0.0", "{}", null, null)).kind())
        .isEqualTo(CallReply.Kind.RESULT);

    dev.stop();

    assertThat(dev.runtime().isRunning()).isFalse();
    assertThat(dev.host().orElseThrow().registered()).isFalse();
    assertThatThrownBy(() -> client.call(CallRequest.of("echo@1.0.0", "{}", null, null)))
        .isInstanceOf(ControlUnreachableException.class)
        .hasMessageContaining("start it with 'bin/phrony-worker dev'");
    dev.stop(); // idempotent
    dev.close();
  }
}
