package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.testkit.Await;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A worker started with no runtime to talk to says so once, with why and what to check, and then
 * keeps trying quietly: no line per try, no stack trace (issue 42, item 2). Each case waits until
 * the worker has tried some 20 times (about 10 s), counted by its own metrics.
 */
class UnreachableRuntimeIT {
  private static final Pattern TRIES =
      Pattern.compile(
          "phrony_worker_stream_reconnects_total\\{[^}]*reason=\"unavailable\"[^}]*\\} ([0-9.]+)");

  @TempDir Path tmp;

  @Test
  void nothing_listening_is_said_once_as_connection_refused() throws Exception {
    String address = "127.0.0.1:" + DistProcess.freePort();
    List<String> lines = runAgainst(address);
    assertThat(lines)
        .filteredOn(l -> l.contains("WARN"))
        .singleElement()
        .asString()
        .contains("cannot reach the runtime at " + address + ": connection refused")
        .contains("--runtime or PHRONY_RUNTIME_ADDR");
  }

  @Test
  void a_host_that_does_not_resolve_is_said_once_as_host_not_found() throws Exception {
    List<String> lines = runAgainst("no-such-runtime.invalid:7777");
    assertThat(lines)
        .filteredOn(l -> l.contains("WARN"))
        .singleElement()
        .asString()
        .contains("cannot reach the runtime at no-such-runtime.invalid:7777: host not found");
  }

  /** Runs a worker against {@code address} until it has tried 20 times; returns its log lines. */
  private List<String> runAgainst(String address) throws Exception {
    try (DistProcess worker =
        DistProcess.start(
            tmp,
            Map.of("PHRONY_RUNTIME_ADDR", address),
            "run",
            "--http",
            "127.0.0.1:0",
            "--state-dir",
            tmp.resolve("state").toString())) {
      int port = worker.httpPort();
      Await.until("20 tries", () -> tries(port) >= 20, DistProcess.DEADLINE.plusSeconds(30));
      List<String> lines = worker.stderr().lines().toList();
      assertThat(lines).as("no stack trace").noneMatch(l -> l.startsWith("\tat "));
      assertThat(lines)
          .as("not a line per try: %s", String.join("\n", lines))
          .filteredOn(l -> l.contains("runtime") || l.contains("reconnect"))
          .hasSizeLessThan(5);
      return lines;
    }
  }

  private static double tries(int port) {
    try {
      Matcher m = TRIES.matcher(DistProcess.get(port, "/metrics").body());
      return m.find() ? Double.parseDouble(m.group(1)) : 0;
    } catch (Exception e) {
      return 0; // the endpoint is starting
    }
  }
}
