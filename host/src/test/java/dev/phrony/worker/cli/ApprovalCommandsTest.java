package dev.phrony.worker.cli;

import static dev.phrony.worker.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.phrony.worker.config.ConfigFile;
import dev.phrony.worker.dev.ApprovalPolicy;
import dev.phrony.worker.dev.CallReply;
import dev.phrony.worker.dev.CallRequest;
import dev.phrony.worker.dev.ControlClient;
import dev.phrony.worker.dev.DevFixture;
import dev.phrony.worker.dev.DevServer;
import dev.phrony.worker.testkit.Await;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code approvals}, {@code approve} and {@code deny} through picocli against a real {@code dev}
 * that holds {@code echo@*} calls for approval.
 */
class ApprovalCommandsTest {
  static DevServer dev;
  static ControlClient client;

  @TempDir
  Path tmp;

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
  static Held hold(String session, String args) {
    CompletableFuture<CallReply> reply = CompletableFuture.supplyAsync(() -> client.call(
        CallRequest.of("echo@1.0.0", args, session, null)));
    String[] id = new String[1];
    Await.until("held", () -> {
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

  @Test
  void approvals_lists_the_held_calls_as_a_table_and_as_json() throws Exception {
    Held held = hold("s-list", "{\"n\":1}");
    try {
      CliRun table = cli("approvals");
      assertThat(table.exit()).as(table.err()).isZero();
      assertThat(table.out()).containsPattern("APPROVAL +CALL +TOOL +ARGS +EXPIRES\n")
          .containsPattern(held.id() + " +s-list:av-local:1:0 +echo@1.0.0 +7B +never\n")
          .contains("answer with: bin/phrony-worker approve ID [--args JSON] [--comment TEXT]"
              + " | bin/phrony-worker deny ID [--comment TEXT]\n");

      CliRun json = cli("approvals", "--format", "json");
      assertThat(json.exit()).isZero();
      JsonNode a = json.json().path("approvals");
      assertThat(a).anySatisfy(x -> {
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
    assertThat(r.out()).isEqualTo("approved " + asIs.id()
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
    assertThat(r.out()).isEqualTo("denied " + held.id() + ": call s-deny:av-local:1:0"
        + " (echo@1.0.0) ends with approval_denied; no worker sees it\n");
    assertThat(held.await().errorLine())
        .isEqualTo("approval_denied: denied by the reviewer: not now; the call was not run");

    CliRun again = cli("approve", held.id());
    assertThat(again.exit()).isEqualTo(1);
    assertThat(again.err()).startsWith("phrony-worker approve: no approval " + held.id()
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
      assertThat(both.err()).contains("give the arguments as --args or with --args-file, not"
          + " both");

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
}
