package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.phrony.worker.testkit.Await;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Human-in-the-loop approvals in {@code dev}, with {@code dev}, {@code call}, {@code approvals},
 * {@code approve} and {@code deny} as child processes, as a plugin author uses them: dev in one
 * terminal, the call in another, the answer in a third.
 */
class DevApprovalsIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern HELD = Pattern.compile("held for approval (ap-[0-9a-f]{8})");
  private static final String PAYMENT = "payments.process-payment@1.0.0";

  @TempDir static Path tmp;

  static DistProcess dev;
  static int controlPort;
  static String control;
  static String runtime;

  @BeforeAll
  static void startDev() throws Exception {
    controlPort = DistProcess.freePort();
    control = "http://127.0.0.1:" + controlPort;
    int runtimePort = DistProcess.freePort();
    runtime = "127.0.0.1:" + runtimePort;
    dev =
        DistProcess.start(
            tmp,
            Map.of(),
            "dev",
            "--port",
            String.valueOf(runtimePort),
            "--control-port",
            String.valueOf(controlPort),
            "--require-approval",
            "payments.*",
            "--require-approval",
            "echo@default");
    dev.awaitStdout("Ctrl-C stops.", DistProcess.DEADLINE);
    assertThat(dev.stdout()).contains("  approval payments.*, echo@default held until approved\n");
  }

  @AfterAll
  static void stopDev() throws Exception {
    if (dev == null) {
      return;
    }
    dev.interrupt();
    DistProcess.Result stopped = dev.awaitExit(DistProcess.DEADLINE);
    assertThat(stopped.exit()).as("stderr: %s", stopped.err()).isZero();
    dev.close();
  }

  /** {@code call ... --runtime}, started: it waits for the answer. */
  private static DistProcess call(String... args) throws Exception {
    return DistProcess.start(tmp, Map.of(), callArgs(args));
  }

  /** {@code call ARGS --runtime ADDR}: calls go over dev's runtime address. */
  private static String[] callArgs(String... args) {
    String[] full = new String[args.length + 3];
    full[0] = "call";
    System.arraycopy(args, 0, full, 1, args.length);
    full[args.length + 1] = "--runtime";
    full[args.length + 2] = runtime;
    return full;
  }

  /** Runs {@code command args... --control} to its end. */
  private static DistProcess.Result run(String... args) throws Exception {
    String[] full = new String[args.length + 2];
    System.arraycopy(args, 0, full, 0, args.length);
    full[args.length] = "--control";
    full[args.length + 1] = control;
    return DistProcess.run(tmp, full);
  }

  /** The approval id {@code call} prints on stderr once its call is held. */
  private static String heldId(DistProcess call) {
    call.awaitStderr("held for approval ap-", DistProcess.DEADLINE);
    Matcher m = HELD.matcher(call.stderr());
    assertThat(m.find()).as(call.stderr()).isTrue();
    return m.group(1);
  }

  /** Invokes the runtime sent for {@code key}, from the control API. */
  private static long invoked(String key) throws Exception {
    JsonNode workers = JSON.readTree(DistProcess.get(controlPort, "/v1/workers").body());
    long n = 0;
    for (JsonNode w : workers.path("workers")) {
      for (JsonNode h : w.path("handlers")) {
        if (h.path("key").asText().equals(key)) {
          n += h.path("invoked").asLong();
        }
      }
    }
    return n;
  }

  private static String payment(Object amount) {
    return "{\"amount\":" + amount + ",\"currency\":\"EUR\",\"payee\":\"ACME\"}";
  }

  @Test
  void a_held_payment_runs_once_approved_as_proposed() throws Exception {
    long before = invoked(PAYMENT);
    try (DistProcess call = call(PAYMENT, payment("12.50"))) {
      String id = heldId(call);
      assertThat(invoked(PAYMENT)).as("held: no worker has it").isEqualTo(before);
      dev.awaitStdout("approval_required approval_id=" + id, Duration.ofSeconds(10));
      assertThat(dev.stdout())
          .containsPattern(
              "approval_required approval_id="
                  + id
                  + " call_id=\\S+ tool="
                  + Pattern.quote(PAYMENT)
                  + " args=48B answer:"
                  + " bin/phrony-worker approve "
                  + id
                  + " --control "
                  + Pattern.quote(control)
                  + " \\[--args JSON\\] \\| bin/phrony-worker deny "
                  + id
                  + " --control "
                  + Pattern.quote(control)
                  + "\n");

      DistProcess.Result list = run("approvals");
      assertThat(list.exit()).as(list.err()).isZero();
      assertThat(list.out())
          .containsPattern(id + " +\\S+ +" + Pattern.quote(PAYMENT) + " +48B +never\n");

      DistProcess.Result approved = run("approve", id, "--comment", "ok");
      assertThat(approved.exit()).as(approved.err()).isZero();
      assertThat(approved.out()).startsWith("approved " + id + ": call ");

      DistProcess.Result done = call.awaitExit(DistProcess.DEADLINE);
      assertThat(done.exit()).as(done.err()).isZero();
      JsonNode receipt = JSON.readTree(done.out());
      assertThat(receipt.path("status").asText()).isEqualTo("succeeded");
      assertThat(receipt.path("amount").decimalValue()).isEqualByComparingTo("12.50");
      assertThat(invoked(PAYMENT)).isEqualTo(before + 1);
    }
  }

  @Test
  void the_handler_gets_the_arguments_as_edited_at_approve() throws Exception {
    try (DistProcess call = call("echo", "{\"to\":\"everyone\",\"text\":\"hi\"}")) {
      String id = heldId(call);

      DistProcess.Result approved =
          run("approve", id, "--args", "{\"to\":\"team\",\"text\":\"hi\"}");
      assertThat(approved.exit()).as(approved.err()).isZero();
      assertThat(approved.out()).endsWith("with the replacement arguments\n");

      DistProcess.Result done = call.awaitExit(DistProcess.DEADLINE);
      assertThat(done.exit()).as(done.err()).isZero();
      assertThat(done.out()).isEqualTo("{\n  \"to\": \"team\",\n  \"text\": \"hi\"\n}\n");
    }
  }

  @Test
  void edited_arguments_that_break_the_schema_are_refused_with_the_pointer() throws Exception {
    try (DistProcess call = call(PAYMENT, payment(5))) {
      String id = heldId(call);

      DistProcess.Result refused = run("approve", id, "--args", payment("\"lots\""));
      assertThat(refused.exit()).isEqualTo(1);
      assertThat(refused.out()).isEmpty();
      assertThat(refused.err())
          .isEqualTo(
              "phrony-worker approve: the args do not fit the input"
                  + " schema of "
                  + PAYMENT
                  + ": /amount: expected number, got string; approval "
                  + id
                  + " is still waiting\n");
      DistProcess.Result negative = run("approve", id, "--args", payment(-1));
      assertThat(negative.exit()).isEqualTo(1);
      assertThat(negative.err()).contains(": /amount: ");

      DistProcess.Result list = run("approvals", "--format", "json");
      assertThat(JSON.readTree(list.out()).path("approvals").findValuesAsText("approval_id"))
          .contains(id);
      assertThat(call.stdout()).isEmpty();

      assertThat(run("approve", id, "--args", payment(4)).exit()).isZero();
      DistProcess.Result done = call.awaitExit(DistProcess.DEADLINE);
      assertThat(done.exit()).as(done.err()).isZero();
      assertThat(JSON.readTree(done.out()).path("amount").intValue()).isEqualTo(4);
    }
  }

  @Test
  void a_denied_call_reaches_the_model_as_a_tool_error_and_the_handler_never_runs()
      throws Exception {
    long before = invoked(PAYMENT);
    try (DistProcess call = call(PAYMENT, payment(99))) {
      String id = heldId(call);

      DistProcess.Result denied = run("deny", id, "--comment", "wrong payee");
      assertThat(denied.exit()).as(denied.err()).isZero();

      DistProcess.Result done = call.awaitExit(DistProcess.DEADLINE);
      assertThat(done.exit()).isEqualTo(4);
      assertThat(done.out()).isEmpty();
      assertThat(done.err())
          .endsWith(
              "\napproval_denied: denied by the reviewer: wrong payee;"
                  + " the call was not run\n");
      assertThat(invoked(PAYMENT)).as("the handler's invocations").isEqualTo(before);
      dev.awaitStdout("outcome=tool_error code=approval_denied", Duration.ofSeconds(10));

      DistProcess.Result again = run("approve", id);
      assertThat(again.exit()).isEqualTo(1);
      assertThat(again.err())
          .startsWith("phrony-worker approve: no approval " + id + " is waiting");
    }
  }

  @Test
  void an_unanswered_call_expires_as_set_in_worker_yaml() throws Exception {
    Path yaml =
        Files.writeString(
            tmp.resolve("worker.yaml"),
            """
        dev:
          require-approval:
            - payments.*
          approval-timeout: 2s
        """);
    int port = DistProcess.freePort();
    int otherRuntimePort = DistProcess.freePort();
    try (DistProcess other =
        DistProcess.start(
            tmp,
            Map.of(),
            "dev",
            "--port",
            String.valueOf(otherRuntimePort),
            "--control-port",
            String.valueOf(port),
            "--config",
            yaml.toString())) {
      other.awaitStdout("Ctrl-C stops.", DistProcess.DEADLINE);
      assertThat(other.stdout())
          .contains("  approval payments.* held until approved (they" + " expire after 2s)\n");

      DistProcess.Result done =
          DistProcess.run(
              tmp, "call", PAYMENT, payment(1), "--runtime", "127.0.0.1:" + otherRuntimePort);

      assertThat(done.exit()).as(done.err()).isEqualTo(4);
      assertThat(done.err())
          .containsPattern("held for approval ap-[0-9a-f]{8}")
          .endsWith("\napproval_expired: approval timed out after 2s; the call was not run\n");
      JsonNode workers = JSON.readTree(DistProcess.get(port, "/v1/workers").body());
      assertThat(workers.findValues("invoked")).allMatch(n -> n.asLong() == 0);
      other.awaitStdout("code=approval_expired", Duration.ofSeconds(10));
      other.interrupt();
      assertThat(other.awaitExit(DistProcess.DEADLINE).exit()).isZero();
    }
  }

  @Test
  void a_session_stream_shows_tool_call_approval_required_and_tool_result_in_order()
      throws Exception {
    String session = "s-it-stream";
    // --follow with --control: the control API's events, followed before the session exists.
    try (DistProcess follow =
        DistProcess.start(
            tmp, Map.of(), "call", "--session", session, "--follow", "--control", control)) {
      // The follow is in place once dev knows the session (it has no call yet).
      Await.until(
          "following " + session,
          () -> DistProcess.status(controlPort, "/v1/sessions/" + session + "/events") == 200,
          DistProcess.DEADLINE);
      DistProcess.Result forecast =
          DistProcess.run(
              tmp,
              callArgs("weather.get-forecast@1.0.0", "{\"city\":\"Oslo\"}", "--session", session));
      assertThat(forecast.exit()).as(forecast.err()).isZero();
      try (DistProcess pay = call(PAYMENT, payment(7), "--session", session)) {
        assertThat(run("approve", heldId(pay)).exit()).isZero();
        assertThat(pay.awaitExit(DistProcess.DEADLINE).exit()).isZero();
      }

      List<String> expected =
          List.of("tool_call", "tool_result", "tool_call", "approval_required", "tool_result");
      follow.awaitStdout("\"type\":\"tool_result\",\"seq\":5", DistProcess.DEADLINE);
      List<JsonNode> events = follow.stdout().lines().map(DevApprovalsIT::json).toList();
      assertThat(events).extracting(e -> e.path("type").asText()).isEqualTo(expected);
      assertThat(events).extracting(e -> e.path("seq").asInt()).containsExactly(1, 2, 3, 4, 5);
      assertThat(events.get(3).path("tool").asText()).isEqualTo("payments.process-payment");
      assertThat(events.get(3).path("approval_id").asText()).startsWith("ap-");
      assertThat(events.get(3).path("call_id").asText())
          .isEqualTo(events.get(2).path("call_id").asText());
      assertThat(events.get(4).path("call_id").asText())
          .isEqualTo(events.get(2).path("call_id").asText());
      assertThat(events.get(4).path("outcome").asText()).isEqualTo("result");

      // The same, from the control API without following.
      String body = DistProcess.get(controlPort, "/v1/sessions/" + session + "/events").body();
      assertThat(body.lines().map(DevApprovalsIT::json).map(e -> e.path("type").asText()).toList())
          .isEqualTo(expected);
    }
  }

  private static JsonNode json(String line) {
    try {
      return JSON.readTree(line);
    } catch (Exception e) {
      throw new AssertionError("not JSON: " + line, e);
    }
  }
}
