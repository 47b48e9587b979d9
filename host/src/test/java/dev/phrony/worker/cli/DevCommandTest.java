package dev.phrony.worker.cli;

import static dev.phrony.worker.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code phrony-worker dev}'s refusals through picocli. (Running it until a signal is covered by
 * the process-level DevIT in dist.)
 */
class DevCommandTest {
  @TempDir Path tmp;

  private static ServerSocket occupy() throws Exception {
    return new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"));
  }

  @Test
  void a_runtime_port_in_use_is_one_line_naming_the_port_and_the_flag() throws Exception {
    try (ServerSocket taken = occupy()) {
      int port = taken.getLocalPort();

      CliRun r = run("dev", "--no-host", "--port", String.valueOf(port), "--control-port", "0");

      assertThat(r.exit()).isEqualTo(1);
      assertThat(r.out()).isEmpty();
      assertThat(r.err())
          .isEqualTo(
              "phrony-worker dev: the runtime's port "
                  + port
                  + " is in use (another 'phrony-worker dev'?): stop what uses it, or choose another "
                  + "port with --port PORT\n");
    }
  }

  @Test
  void a_control_port_in_use_names_control_port() throws Exception {
    try (ServerSocket taken = occupy()) {
      int port = taken.getLocalPort();

      CliRun r = run("dev", "--no-host", "--port", "0", "--control-port", String.valueOf(port));

      assertThat(r.exit()).isEqualTo(1);
      assertThat(r.err())
          .isEqualTo(
              "phrony-worker dev: the control port "
                  + port
                  + " is in use (another 'phrony-worker dev'?): stop what uses it, or choose another "
                  + "port with --control-port PORT\n");
    }
  }

  @Test
  void an_agent_dev_cannot_run_is_a_usage_error_naming_the_file_and_the_field() throws Exception {
    Path agent = Files.createDirectories(tmp.resolve("agent"));
    Files.writeString(
        agent.resolve("agent.yaml"),
        """
        apiVersion: phrony.com/v1
        kind: Agent
        metadata:
          name: a
          namespace: demo
          version: 1.0.0
        spec:
          model:
            provider: openai
            name: gpt
        """);

    CliRun r =
        run("dev", "--no-host", "--port", "0", "--control-port", "0", "--agent", agent.toString());

    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.out()).isEmpty();
    assertThat(r.err())
        .startsWith("phrony-worker dev: " + agent.resolve("agent.yaml") + ":")
        .contains("spec.model.provider: openai: dev runs only the runtime's scripted model");
  }

  @Test
  void bad_port_combinations_are_usage_errors() {
    assertThat(run("dev", "--port", "7000", "--control-port", "7000").err())
        .isEqualTo(
            "phrony-worker dev: --port and --control-port are both 7000: give them "
                + "different ports\n");
    assertThat(run("dev", "--port", "70000").err()).contains("--port 70000 is not a port");
    CliRun plugins = run("dev", "--no-host", "--plugins", "x");
    assertThat(plugins.exit()).isEqualTo(1);
    assertThat(plugins.err()).contains("--plugins has no effect with --no-host");
  }

  @Test
  void bad_approval_settings_are_usage_errors_naming_the_flag_or_the_file_line() throws Exception {
    CliRun flag =
        run(
            "dev",
            "--no-host",
            "--port",
            "0",
            "--control-port",
            "0",
            "--require-approval",
            "pay ments");
    assertThat(flag.exit()).isEqualTo(1);
    assertThat(flag.err())
        .isEqualTo(
            "phrony-worker dev: --require-approval 'pay ments' is not"
                + " a tool@version or a pattern of them (letters, digits, '.', '_', '-', '+', '@' and"
                + " '*')\n");

    CliRun timeout = run("dev", "--no-host", "--approval-timeout", "soon");
    assertThat(timeout.exit()).isEqualTo(1);
    assertThat(timeout.err()).contains("--approval-timeout").contains("'soon' is not a duration");

    Path yaml = Files.writeString(tmp.resolve("worker.yaml"), "dev:\n  approval-timeout: 0s\n");
    CliRun file =
        run("dev", "--no-host", "--port", "0", "--control-port", "0", "--config", yaml.toString());
    assertThat(file.exit()).isEqualTo(1);
    assertThat(file.err())
        .isEqualTo(
            "phrony-worker dev: "
                + yaml
                + ":2: dev: approval-timeout: '0s' must be longer than zero\n");
  }

  @Test
  void a_missing_plugins_directory_is_a_usage_error() {
    CliRun r = run("dev", "--plugins", "no-such-plugins", "--port", "0", "--control-port", "0");

    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err()).startsWith("phrony-worker dev: plugins directory no-such-plugins");
  }
}
