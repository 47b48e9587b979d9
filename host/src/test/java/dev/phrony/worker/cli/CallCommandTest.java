package dev.phrony.worker.cli;

import static dev.phrony.worker.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.dev.DevFixture;
import dev.phrony.worker.dev.DevServer;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code phrony-worker call} through picocli against a real {@code dev}, output captured. */
class CallCommandTest {
  static DevServer dev;

  @TempDir Path tmp;

  @BeforeAll
  static void start() {
    dev = DevFixture.start();
  }

  @AfterAll
  static void stop() {
    dev.close();
  }

  static CliRun call(String... args) {
    return CliRun.call(dev.runtimeTarget(), args);
  }

  @Test
  void a_result_prints_pretty_json_and_exits_0() {
    CliRun r = call("echo@1.0.0", "{\"city\":\"Oslo\",\"days\":[1,2],\"price\":1.10}");

    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out())
        .isEqualTo(
            """
        {
          "city": "Oslo",
          "days": [
            1,
            2
          ],
          "price": 1.10
        }
        """);
    assertThat(r.err()).isEmpty();
  }

  @Test
  void a_payload_that_is_not_json_prints_as_is_and_no_args_means_an_empty_object() {
    CliRun text = call("text");
    CliRun empty = call("echo@1.0.0");

    assertThat(text.exit()).isZero();
    assertThat(text.out()).isEqualTo("plain words\n");
    assertThat(empty.out()).isEqualTo("{}\n");
  }

  @Test
  void a_tool_error_prints_code_and_message_on_stderr_and_exits_4() {
    CliRun r = call("fail@1.0.0", "{}");

    assertThat(r.exit()).isEqualTo(4);
    assertThat(r.out()).isEmpty();
    assertThat(r.err()).isEqualTo("out_of_stock: no more widgets\n");
  }

  @Test
  void no_handler_exits_5_with_the_runtime_error_and_a_hint() {
    CliRun r = call("nope@1", "--timeout", "200ms");

    assertThat(r.exit()).isEqualTo(5);
    assertThat(r.err().lines().toList())
        .containsExactly(
            "no_handler: no handler registered for tool",
            "hint: no worker serves nope@1; served: echo@1.0.0, fail@1.0.0, hold@1.0.0, text@default");
  }

  @Test
  void a_deadline_interrupts_the_handler() {
    CliRun r = call("hold@1.0.0", "--timeout", "300ms", "--session", "cli-deadline");

    assertThat(r.exit()).isEqualTo(4);
    assertThat(r.err()).startsWith("deadline_exceeded: ");
  }

  @Test
  void arguments_from_a_file_work_and_their_json_errors_name_the_file_line_and_column()
      throws Exception {
    Path good = Files.writeString(tmp.resolve("good.json"), "{\n  \"from\": \"file\"\n}\n");
    Path bad = Files.writeString(tmp.resolve("bad.json"), "{\n  \"from\": \"file\",\n}\n");

    CliRun ok = call("echo@1.0.0", "--args-file", good.toString());
    CliRun broken = call("echo@1.0.0", "--args-file", bad.toString());
    CliRun missing = call("echo@1.0.0", "--args-file", tmp.resolve("none.json").toString());

    assertThat(ok.out()).isEqualTo("{\n  \"from\": \"file\"\n}\n");
    assertThat(broken.exit()).isEqualTo(1);
    assertThat(broken.err())
        .startsWith("phrony-worker call: --args-file " + bad + " is not JSON: ")
        .endsWith("at line 3, column 1\n");
    assertThat(missing.exit()).isEqualTo(1);
    assertThat(missing.err()).contains("does not exist");
  }

  @Test
  void arguments_that_are_not_json_are_refused_before_sending() {
    CliRun r = run("call", "echo", "{city:Oslo}", "--runtime", "127.0.0.1:1");

    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err().lines().toList())
        .singleElement()
        .asString()
        .startsWith("phrony-worker call: ARGS_JSON is not JSON: ")
        .contains("at line 1, column 2");
  }

  @Test
  void usage_errors_exit_1() {
    assertThat(call("echo", "{}", "--args-file", "x.json").err())
        .contains("give the arguments as ARGS_JSON or with --args-file, not both");
    assertThat(call("echo@", "{}").err()).contains("'echo@' has an empty version");
    CliRun badTimeout = call("echo", "--timeout", "soon");
    assertThat(badTimeout.exit()).isEqualTo(1);
    assertThat(badTimeout.err()).contains("--timeout").contains("30m");
    assertThat(call("echo", "--timeout", "0s").exit()).isEqualTo(1);
    assertThat(run("call").exit()).isEqualTo(1);
  }

  @Test
  void no_dev_at_the_runtime_address_exits_6_saying_to_start_it() throws Exception {
    int port;
    try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      port = probe.getLocalPort();
    }

    CliRun r = run("call", "echo", "--runtime", "127.0.0.1:" + port);

    assertThat(r.exit()).isEqualTo(6);
    assertThat(r.err().lines().toList())
        .singleElement()
        .asString()
        .startsWith("phrony-worker call: no runtime answers at 127.0.0.1:" + port)
        .contains("start one with 'phrony-worker dev'");
  }

  @Test
  void calls_go_over_the_runtime_address_not_the_control_api() {
    CliRun r = run("call", "echo@1.0.0", "--control", dev.controlUrl());

    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err()).contains("give dev's runtime address with --runtime ADDR");
  }

  @Test
  void calls_of_one_named_session_are_its_turns_and_go_on_after_a_failed_one() {
    assertThat(call("echo@1.0.0", "{\"n\":1}", "--session", "cli-turns").exit()).isZero();
    assertThat(call("nope@1", "--session", "cli-turns").exit()).isEqualTo(5);
    CliRun third = call("echo@1.0.0", "{\"n\":3}", "--session", "cli-turns");

    assertThat(third.exit()).as(third.err()).isZero();
    assertThat(third.out()).isEqualTo("{\n  \"n\": 3\n}\n");
  }
}
