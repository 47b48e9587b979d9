package dev.phrony.worker.cli;

import static dev.phrony.worker.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.phrony.worker.config.ConfigFile;
import dev.phrony.worker.dev.ApprovalPolicy;
import dev.phrony.worker.dev.CallReply;
import dev.phrony.worker.dev.CallRequest;
import dev.phrony.worker.dev.ControlClient;
import dev.phrony.worker.dev.ControlRequestException;
import dev.phrony.worker.dev.DevFixture;
import dev.phrony.worker.dev.DevServer;
import dev.phrony.worker.testkit.Await;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code approvals}, {@code approve} and {@code deny} through picocli against a real {@code dev}
 * that holds {@code echo@*} calls for approval.
 */
class ApprovalCommandsTest {
  static DevServer dev;
  static ControlClient client;

  @TempDir Path tmp;

  @BeforeAll
  static void start() {
    dev = DevFixture.start(ApprovalPolicy.resolve(List.of("echo@*"), null, ConfigFile.none()));
    client = ControlClient.of(dev.controlUrl());
  }

  @AfterAll
  static void stop() {
    dev.close();
  }

  static CliRun cli(String... args) {
    String[] full = new String[args.length + 2];
    System.arraycopy(args, 0, full, 0, args.length);
    full[args.length] = "--control";
    full[args.length + 1] = dev.controlUrl();
    return run(full);
  }

  /** Submits an echo call in {@code session} and waits until it is held. */
  /** {@code call ARGS} on dev's runtime address. */
  static CliRun callCli(String... args) {
    return CliRun.call(dev.runtimeTarget(), args);
  }

  static Held hold(String session, String args) {
    CompletableFuture<CallReply> reply =
        CompletableFuture.supplyAsync(
            () -> client.call(CallRequest.of("echo@1.0.0", args, session, null)));
    String[] id = new String[1];
    Await.until(
        "held",
        () -> {
          for (JsonNode a : client.approvals().path("approvals")) {
            if (a.path("session_id").asText().equals(session)) {
              id[0] = a.path("approval_id").asText();
              return true;
            }
          }
          return false;
        });
    return new Held(id[0], reply);
  }

  record Held(String id, CompletableFuture<CallReply> reply) {
    CallReply await() throws Exception {
      return reply.get(30, TimeUnit.SECONDS);
    }
  }

  /** The same command through the runtime's approval RPCs on dev's runtime address. */
  static CliRun rpc(String... args) {
    String[] full = new String[args.length + 2];
    System.arraycopy(args, 0, full, 0, args.length);
    full[args.length] = "--runtime";
    full[args.length + 1] = dev.runtimeTarget();
    return run(full);
  }

  @Test
  void over_the_runtimes_rpcs_approvals_lists_and_approve_and_deny_answer() throws Exception {
    Held approved = hold("s-rpc-yes", "{\"n\":2}");
    Held denied = hold("s-rpc-no", "{\"n\":3}");

    CliRun table = rpc("approvals");
    assertThat(table.exit()).as(table.err()).isZero();
    assertThat(table.out())
        .containsPattern(approved.id() + " +s-rpc-yes:av-local:1:0 +echo@1.0.0 +7B +never\n")
        .containsPattern(denied.id() + " +s-rpc-no:av-local:1:0 +echo@1.0.0 +7B +never\n");
    CliRun json = rpc("approvals", "--format", "json");
    assertThat(json.json().path("approvals").findValuesAsText("approval_id"))
        .contains(approved.id(), denied.id());

    CliRun yes = rpc("approve", approved.id(), "--args", "{\"n\":20}");
    assertThat(yes.exit()).as(yes.err()).isZero();
    assertThat(yes.out())
        .isEqualTo(
            "approved "
                + approved.id()
                + ": call s-rpc-yes:av-local:1:0 (echo@1.0.0) goes to a worker with the"
                + " replacement arguments\n");
    assertThat(approved.await().json().path("payload").toString()).isEqualTo("{\"n\":20}");

    CliRun no = rpc("deny", denied.id(), "--comment", "not now");
    assertThat(no.exit()).as(no.err()).isZero();
    assertThat(no.out())
        .isEqualTo(
            "denied "
                + denied.id()
                + ": call s-rpc-no:av-local:1:0 (echo@1.0.0) is not run; no worker sees it\n");
    assertThat(denied.await().kind()).isEqualTo(CallReply.Kind.TOOL_ERROR);

    CliRun again = rpc("approve", denied.id());
    assertThat(again.exit()).isEqualTo(1);
    assertThat(again.err()).contains("approval " + denied.id() + " not found");
  }

  @Test
  void over_the_rpcs_no_runtime_at_the_address_exits_6() {
    CliRun r = run("approvals", "--runtime", "127.0.0.1:1");
    assertThat(r.exit()).isEqualTo(6);
    assertThat(r.err())
        .startsWith("phrony-worker approvals: no runtime answers at 127.0.0.1:1")
        .contains("start one with 'phrony-worker dev'");
  }

  @Test
  void approvals_lists_the_held_calls_as_a_table_and_as_json() throws Exception {
    Held held = hold("s-list", "{\"n\":1}");
    try {
      CliRun table = cli("approvals");
      assertThat(table.exit()).as(table.err()).isZero();
      assertThat(table.out())
          .containsPattern("APPROVAL +CALL +TOOL +ARGS +EXPIRES\n")
          .containsPattern(held.id() + " +s-list:av-local:1:0 +echo@1.0.0 +7B +never\n")
          .contains(
              "answer with: bin/phrony-worker approve ID [--args JSON] [--comment TEXT]"
                  + " | bin/phrony-worker deny ID [--comment TEXT]\n");

      CliRun json = cli("approvals", "--format", "json");
      assertThat(json.exit()).isZero();
      JsonNode a = json.json().path("approvals");
      assertThat(a)
          .anySatisfy(
              x -> {
                assertThat(x.path("approval_id").asText()).isEqualTo(held.id());
                assertThat(x.path("args").toString()).isEqualTo("{\"n\":1}");
              });
      assertThat(json.json().path("require_approval").toString()).isEqualTo("[\"echo@*\"]");
    } finally {
      client.answer(held.id(), false, null, null);
    }
  }

  @Test
  void approve_as_is_or_with_replacement_args_from_a_flag_or_a_file() throws Exception {
    Held asIs = hold("s-approve", "{\"n\":1}");
    CliRun r = cli("approve", asIs.id(), "--comment", "fine");
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out())
        .isEqualTo(
            "approved "
                + asIs.id()
                + ": call s-approve:av-local:1:0 (echo@1.0.0) goes to a worker\n");
    assertThat(asIs.await().payload()).isEqualTo("{\n  \"n\": 1\n}");

    Held edited = hold("s-approve", "{\"n\":1}");
    r = cli("approve", edited.id(), "--args", "{\"n\":2}");
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out()).endsWith(" goes to a worker with the replacement arguments\n");
    assertThat(edited.await().payload()).isEqualTo("{\n  \"n\": 2\n}");

    Held fromFile = hold("s-approve", "{\"n\":1}");
    Path file = Files.writeString(tmp.resolve("args.json"), "{\"n\": 3}\n");
    r = cli("approve", fromFile.id(), "--args-file", file.toString());
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(fromFile.await().payload()).isEqualTo("{\n  \"n\": 3\n}");
  }

  @Test
  void deny_ends_the_call_with_the_comment_and_a_second_answer_is_refused() throws Exception {
    Held held = hold("s-deny", "{}");

    CliRun r = cli("deny", held.id(), "--comment", "not now");

    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out())
        .isEqualTo(
            "denied "
                + held.id()
                + ": call s-deny:av-local:1:0"
                + " (echo@1.0.0) ends with approval_denied; no worker sees it\n");
    assertThat(held.await().errorLine())
        .isEqualTo("approval_denied: denied by the reviewer: not now; the call was not run");

    CliRun again = cli("approve", held.id());
    assertThat(again.exit()).isEqualTo(1);
    assertThat(again.err())
        .startsWith(
            "phrony-worker approve: no approval "
                + held.id()
                + " is waiting (it was answered, expired, or never existed); waiting: ");
  }

  @Test
  void usage_errors_exit_1_and_leave_the_approval_waiting() throws Exception {
    Held held = hold("s-usage", "{}");
    try {
      CliRun notJson = cli("approve", held.id(), "--args", "{n:2}");
      assertThat(notJson.exit()).isEqualTo(1);
      assertThat(notJson.err()).startsWith("phrony-worker approve: --args is not JSON: ");

      CliRun both = cli("approve", held.id(), "--args", "{}", "--args-file", "x.json");
      assertThat(both.exit()).isEqualTo(1);
      assertThat(both.err())
          .contains("give the arguments as --args or with --args-file, not" + " both");

      assertThat(held.reply()).isNotDone();
      assertThat(cli("approvals").out()).contains(held.id());
    } finally {
      client.answer(held.id(), false, null, null);
    }
  }

  @Test
  void without_dev_the_commands_exit_6() {
    CliRun r = run("approvals", "--control", "http://127.0.0.1:1");
    assertThat(r.exit()).isEqualTo(6);
    assertThat(r.err()).startsWith("phrony-worker approvals: cannot reach phrony-worker dev at");
  }

  @Test
  void call_without_a_terminal_prints_the_approval_id_on_stderr_and_waits_for_the_answer()
      throws Exception {
    CompletableFuture<CliRun> call =
        CompletableFuture.supplyAsync(
            () -> callCli("echo@1.0.0", "{\"n\":1}", "--session", "s-call"));
    Held held = hold("s-call-other", "{}"); // another session's approval is not call's
    String id = awaitSession("s-call");
    client.answer(held.id(), false, null, null);
    client.answer(id, true, null, "{\"n\":9}");

    CliRun r = call.get(30, TimeUnit.SECONDS);
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out()).isEqualTo("{\n  \"n\": 9\n}\n");
    assertThat(r.err())
        .isEqualTo(
            "call: held for approval "
                + id
                + " (require-approval echo@*"
                + " (flag --require-approval)); answer with: bin/phrony-worker approve "
                + id
                + " --runtime "
                + dev.runtimeTarget()
                + " [--args JSON] | bin/phrony-worker deny "
                + id
                + " --runtime "
                + dev.runtimeTarget()
                + "\n");

    CompletableFuture<CliRun> denied =
        CompletableFuture.supplyAsync(() -> callCli("echo@1.0.0", "{}"));
    String second = awaitSession(null);
    client.answer(second, false, "no", null);
    CliRun d = denied.get(30, TimeUnit.SECONDS);
    assertThat(d.exit()).isEqualTo(4);
    assertThat(d.err())
        .endsWith("\napproval_denied: denied by the reviewer: no; the call was" + " not run\n");
  }

  @Test
  void call_follow_prints_a_session_s_events_until_dev_stops() throws Exception {
    DevServer own =
        DevFixture.start(ApprovalPolicy.resolve(List.of("echo@*"), null, ConfigFile.none()));
    try {
      StringWriter out = new StringWriter();
      StringWriter err = new StringWriter();
      CommandLine cmd = PhronyWorkerCommand.newCommandLine(new String[] {"call"});
      cmd.setOut(new PrintWriter(out, true));
      cmd.setErr(new PrintWriter(err, true));
      CompletableFuture<Integer> follow =
          CompletableFuture.supplyAsync(
              () ->
                  cmd.execute(
                      "call", "--session", "s-follow", "--follow", "--control", own.controlUrl()));
      Await.until("following", () -> followed(own));
      ControlClient c = ControlClient.of(own.controlUrl());
      CompletableFuture<CallReply> reply =
          CompletableFuture.supplyAsync(
              () -> c.call(CallRequest.of("echo@1.0.0", "{\"n\":1}", "s-follow", null)));
      Await.until("held", () -> !c.approvals().path("approvals").isEmpty());
      c.answer(
          c.approvals().path("approvals").get(0).path("approval_id").asText(), true, null, null);
      reply.get(30, TimeUnit.SECONDS);
      Await.until("three lines", () -> out.toString().lines().count() == 3);

      own.stop();

      assertThat(follow.get(30, TimeUnit.SECONDS)).as(err.toString()).isZero();
      assertThat(
              out.toString()
                  .lines()
                  .map(
                      l -> {
                        try {
                          return new ObjectMapper().readTree(l).path("type").asText();
                        } catch (Exception e) {
                          throw new AssertionError(l, e);
                        }
                      })
                  .toList())
          .containsExactly("tool_call", "approval_required", "tool_result");
    } finally {
      own.close();
    }
  }

  @Test
  void call_follow_needs_a_session_and_no_tool() {
    assertThat(cli("call", "--follow").err())
        .contains("--follow needs --session ID: the session whose events to print");
    CliRun both = cli("call", "echo", "--session", "s", "--follow");
    assertThat(both.exit()).isEqualTo(1);
    assertThat(both.err()).contains("--follow prints a session's events and makes no call");
    assertThat(cli("call").err())
        .contains(
            "TOOL[@VERSION] is required (or --session ID"
                + " --follow to print a session's events)");
  }

  /** Whether s-follow is followed: dev knows a session once it is followed, before any call. */
  private static boolean followed(DevServer d) {
    try (ControlClient.EventStream s =
        ControlClient.of(d.controlUrl()).events("s-follow", 0, false)) {
      return true;
    } catch (ControlRequestException e) {
      return false;
    }
  }

  /** The id of the approval waiting in {@code session} (any session when null). */
  private static String awaitSession(String session) {
    String[] id = new String[1];
    Await.until(
        "an approval in " + session,
        () -> {
          for (JsonNode a : client.approvals().path("approvals")) {
            if (session == null || a.path("session_id").asText().equals(session)) {
              id[0] = a.path("approval_id").asText();
              return true;
            }
          }
          return false;
        });
    return id[0];
  }
}
