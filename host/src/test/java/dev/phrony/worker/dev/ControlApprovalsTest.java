package dev.phrony.worker.dev;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.Approval;
import dev.phrony.runtime.v1.ApprovalDecision;
import dev.phrony.runtime.v1.DecideApprovalRequest;
import dev.phrony.runtime.v1.DecideApprovalResponse;
import dev.phrony.runtime.v1.ListApprovalsRequest;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.worker.config.ConfigFile;
import dev.phrony.worker.testkit.Await;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import java.io.BufferedReader;
import java.io.PrintWriter;
import java.io.StringReader;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Approvals and session streams through the control API, over real HTTP, in front of a real
 * embedded runtime and host: dev started with {@code --require-approval pay@*}.
 */
class ControlApprovalsTest {
  static final AtomicInteger paid = new AtomicInteger();
  static DevServer dev;
  static ControlClient client;
  static final StringWriter console = new StringWriter();

  @BeforeAll
  static void start() {
    DevFixture.Handler pay = DevFixture.Handler.pay(paid);
    dev =
        DevServer.start(
            new DevServer.Options(
                0,
                0,
                Optional.of(DevFixture.host(DevFixture.catalog(pay))),
                ApprovalPolicy.resolve(
                    List.of("pay@*", "nothing.here@*"), null, ConfigFile.none())));
    dev.showEvents(new PrintWriter(console, true));
    client = ControlClient.of(dev.controlUrl());
  }

  @AfterAll
  static void stop() {
    dev.close();
  }

  private static CompletableFuture<CallReply> pay(String session, String args) {
    return CompletableFuture.supplyAsync(
        () -> client.call(CallRequest.of("pay@1.0.0", args, session, null)));
  }

  private static JsonNode awaitApproval(String session) {
    JsonNode[] found = new JsonNode[1];
    Await.until(
        "an approval of " + session,
        () -> {
          for (JsonNode a : client.approvals().path("approvals")) {
            if (a.path("session_id").asText().equals(session)) {
              found[0] = a;
              return true;
            }
          }
          return false;
        });
    return found[0];
  }

  @Test
  void a_held_call_is_listed_and_answered_over_the_runtimes_approval_rpcs_too() throws Exception {
    ManagedChannel channel =
        NettyChannelBuilder.forTarget(dev.runtimeTarget()).usePlaintext().build();
    try {
      var rpc = RuntimeGrpc.newBlockingStub(channel);
      CompletableFuture<CallReply> reply = pay("s-rpc", "{\"amount\":10}");
      String id = awaitApproval("s-rpc").path("approval_id").asText();

      List<Approval> listed =
          rpc.listApprovals(ListApprovalsRequest.newBuilder().setSessionId("s-rpc").build())
              .getApprovalsList();
      assertThat(listed)
          .singleElement()
          .satisfies(
              a -> {
                assertThat(a.getId()).isEqualTo(id);
                assertThat(a.getCallId()).isEqualTo("s-rpc:av-local:1:0");
                assertThat(a.getStatus()).isEqualTo("pending");
                assertThat(a.getTool()).isEqualTo("pay");
              });
      assertThatThrownBy(
              () ->
                  rpc.decideApproval(
                      DecideApprovalRequest.newBuilder()
                          .setApprovalId(id)
                          .setDecision(ApprovalDecision.APPROVAL_DECISION_APPROVE)
                          .setArgs(ByteString.copyFromUtf8("{\"amount\":\"ten\"}"))
                          .build()))
          .isInstanceOfSatisfying(
              StatusRuntimeException.class,
              e -> {
                assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                assertThat(e.getStatus().getDescription())
                    .contains("/amount")
                    .endsWith("approval " + id + " is still waiting");
              });

      DecideApprovalResponse decided =
          rpc.decideApproval(
              DecideApprovalRequest.newBuilder()
                  .setApprovalId(id)
                  .setDecision(ApprovalDecision.APPROVAL_DECISION_APPROVE)
                  .setArgs(ByteString.copyFromUtf8("{\"amount\":7}"))
                  .build());

      assertThat(decided.getStatus()).isEqualTo("approved");
      CallReply r = reply.get(20, TimeUnit.SECONDS);
      assertThat(r.kind()).isEqualTo(CallReply.Kind.RESULT);
      assertThat(r.json().path("payload").path("amount").asInt()).isEqualTo(7);
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void the_banner_names_the_patterns_and_warns_of_one_that_matches_nothing() {
    assertThat(dev.banner())
        .contains("  approval pay@*, nothing.here@* held until approved\n")
        .contains("  warning  require-approval nothing.here@* matches no handler served here");
  }

  @Test
  void a_held_call_is_listed_answered_with_replacement_args_and_the_handler_gets_them()
      throws Exception {
    CompletableFuture<CallReply> reply = pay("s-edit", "{\"amount\":10}");
    JsonNode a = awaitApproval("s-edit");
    String id = a.path("approval_id").asText();

    assertThat(a.path("call_id").asText()).isEqualTo("s-edit:av-local:1:0");
    assertThat(a.path("tool").asText()).isEqualTo("pay");
    assertThat(a.path("version").asText()).isEqualTo("1.0.0");
    assertThat(a.path("args").toString()).isEqualTo("{\"amount\":10}");
    assertThat(a.path("reason").asText())
        .isEqualTo("require-approval pay@* (flag --require-approval)");
    assertThat(a.path("approvals_required").asInt()).isEqualTo(1);
    assertThat(a.path("approvals_received").asInt()).isZero();
    assertThat(a.path("expires_at").asText()).isEmpty();
    assertThat(client.approvals().path("require_approval").toString())
        .isEqualTo("[\"pay@*\",\"nothing.here@*\"]");
    Await.until("the console line", () -> console.toString().contains("approval_required"));
    assertThat(console.toString())
        .containsPattern(
            "approval_required approval_id="
                + id
                + " call_id=s-edit:av-local:1:0 tool=pay@1.0.0 args=13B answer: bin/phrony-worker"
                + " approve "
                + id
                + " --control "
                + dev.controlUrl()
                + " \\[--args JSON\\] \\|"
                + " bin/phrony-worker deny "
                + id
                + " --control "
                + dev.controlUrl()
                + "\n");

    assertThatThrownBy(() -> client.answer(id, true, null, "{\"amount\":\"ten\"}"))
        .isInstanceOfSatisfying(
            ControlRequestException.class,
            e -> {
              assertThat(e.status()).isEqualTo(422);
              assertThat(e.code()).isEqualTo("invalid_args");
              assertThat(e.getMessage())
                  .isEqualTo(
                      "the args do not fit the input schema of"
                          + " pay@1.0.0: /amount: expected number, got string; approval "
                          + id
                          + " is still waiting");
            });
    assertThat(reply).isNotDone();
    assertThat(awaitApproval("s-edit").path("approval_id").asText()).isEqualTo(id);

    JsonNode answer = client.answer(id, true, "half", "{\"amount\":5}");
    assertThat(answer.path("decision").asText()).isEqualTo("approved");
    assertThat(answer.path("args_replaced").asBoolean()).isTrue();

    CallReply done = reply.get(30, TimeUnit.SECONDS);
    assertThat(done.kind()).isEqualTo(CallReply.Kind.RESULT);
    assertThat(done.json().path("payload").toString()).isEqualTo("{\"amount\":5}");
  }

  @Test
  void a_denied_call_is_a_tool_error_and_a_second_answer_is_refused() throws Exception {
    int before = paid.get();
    CompletableFuture<CallReply> reply = pay("s-deny", "{\"amount\":10}");
    String id = awaitApproval("s-deny").path("approval_id").asText();

    assertThatThrownBy(() -> client.answer(id, false, null, "{\"amount\":1}"))
        .isInstanceOfSatisfying(
            ControlRequestException.class, e -> assertThat(e.status()).isEqualTo(400));
    assertThat(client.answer(id, false, "no", null).path("decision").asText()).isEqualTo("denied");

    CallReply done = reply.get(30, TimeUnit.SECONDS);
    assertThat(done.kind()).isEqualTo(CallReply.Kind.TOOL_ERROR);
    assertThat(done.errorLine())
        .isEqualTo("approval_denied: denied by the reviewer: no; the call was not run");
    assertThat(paid).hasValue(before);
    assertThatThrownBy(() -> client.answer(id, true, null, null))
        .isInstanceOfSatisfying(
            ControlRequestException.class,
            e -> {
              assertThat(e.status()).isEqualTo(404);
              assertThat(e.getMessage()).startsWith("no approval " + id + " is waiting");
            });
  }

  @Test
  void a_session_stream_shows_its_calls_approvals_and_results_in_order() throws Exception {
    List<String> seen = new ArrayList<>();
    try (ControlClient.EventStream stream = client.events("s-stream", 0, true)) {
      CompletableFuture<CallReply> first =
          CompletableFuture.supplyAsync(
              () -> client.call(CallRequest.of("echo@1.0.0", "{\"n\":1}", "s-stream", null)));
      first.get(30, TimeUnit.SECONDS);
      CompletableFuture<CallReply> second = pay("s-stream", "{\"amount\":3}");
      String id = awaitApproval("s-stream").path("approval_id").asText();
      client.answer(id, true, "", null);
      second.get(30, TimeUnit.SECONDS);
      for (int i = 0; i < 5; i++) {
        seen.add(stream.next());
      }
    }
    List<JsonNode> events = seen.stream().map(Json::parse).toList();
    assertThat(events)
        .extracting(e -> e.path("type").asText())
        .containsExactly(
            "tool_call", "tool_result", "tool_call", "approval_required", "tool_result");
    assertThat(events).extracting(e -> e.path("seq").asLong()).containsExactly(1L, 2L, 3L, 4L, 5L);
    assertThat(events.get(2).path("args").toString()).isEqualTo("{\"amount\":3}");
    assertThat(events.get(3).path("call_id").asText()).isEqualTo("s-stream:av-local:1:1");
    assertThat(events.get(4).path("outcome").asText()).isEqualTo("result");
    assertThat(events.get(4).path("payload").toString()).isEqualTo("{\"amount\":3}");

    // Without follow: what is kept, after a given event.
    try (ControlClient.EventStream kept = client.events("s-stream", 3, false)) {
      assertThat(Json.parse(kept.next()).path("type").asText()).isEqualTo("approval_required");
      assertThat(Json.parse(kept.next()).path("type").asText()).isEqualTo("tool_result");
      assertThat(kept.next()).isNull();
    }
    assertThatThrownBy(() -> client.events("s-none", 0, false))
        .isInstanceOfSatisfying(
            ControlRequestException.class, e -> assertThat(e.status()).isEqualTo(404));
    assertThatThrownBy(() -> client.get("/v1/sessions/s-stream/events?since=3"))
        .isInstanceOfSatisfying(
            ControlRequestException.class,
            e -> {
              assertThat(e.status()).isEqualTo(400);
              assertThat(e.getMessage())
                  .isEqualTo("unknown parameter 'since'; the parameters are" + " after, follow");
            });
  }

  @Test
  void stopping_dev_ends_a_held_call_shutdown_and_then_the_followed_stream() throws Exception {
    DevServer other =
        DevServer.start(
            new DevServer.Options(
                0,
                0,
                Optional.of(DevFixture.host(DevFixture.catalog())),
                ApprovalPolicy.resolve(
                    List.of("echo@*"), Duration.ofMinutes(1), ConfigFile.none())));
    try {
      ControlClient c = ControlClient.of(other.controlUrl());
      ControlClient.EventStream stream = c.events("s-stop", 0, true);
      CompletableFuture<CallReply> held =
          CompletableFuture.supplyAsync(
              () -> c.call(CallRequest.of("echo@1.0.0", "{}", "s-stop", null)));
      assertThat(Json.parse(stream.next()).path("type").asText()).isEqualTo("tool_call");
      JsonNode approval = Json.parse(stream.next());
      assertThat(approval.path("type").asText()).isEqualTo("approval_required");
      assertThat(approval.path("expires_at").asText()).isNotEmpty();

      other.stop();

      assertThat(Json.parse(stream.next()).path("error").path("kind").asText())
          .isEqualTo("shutdown");
      assertThat(stream.next()).isNull();
      assertThat(held.get(30, TimeUnit.SECONDS).errorCode()).isEqualTo("shutdown");
    } finally {
      other.close();
    }
  }

  @Test
  void on_a_terminal_an_empty_answer_denies_and_no_answer_leaves_it_waiting() throws Exception {
    CompletableFuture<CallReply> denied = pay("s-prompt-n", "{\"amount\":10}");
    JsonNode first = awaitApproval("s-prompt-n");
    StringWriter screen = new StringWriter();
    new ApprovalPrompt(
            new BufferedReader(new StringReader("\n")), new PrintWriter(screen, true), client)
        .ask(first);
    assertThat(screen.toString()).endsWith("denied " + first.path("approval_id").asText() + "\n");
    assertThat(denied.get(30, TimeUnit.SECONDS).errorCode()).isEqualTo("approval_denied");

    CompletableFuture<CallReply> waiting = pay("s-prompt-eof", "{\"amount\":10}");
    JsonNode second = awaitApproval("s-prompt-eof");
    String id = second.path("approval_id").asText();
    new ApprovalPrompt(
            new BufferedReader(new StringReader("")), new PrintWriter(screen, true), client)
        .ask(second);
    assertThat(screen.toString())
        .endsWith(
            "no answer: " + id + " still waits (phrony-worker" + " approve|deny " + id + ")\n");
    assertThat(waiting).isNotDone();
    client.answer(id, true, null, null);
    assertThat(waiting.get(30, TimeUnit.SECONDS).kind()).isEqualTo(CallReply.Kind.RESULT);
  }

  @Test
  void on_a_terminal_the_prompt_asks_again_after_bad_args_and_approves_the_edited_ones()
      throws Exception {
    CompletableFuture<CallReply> reply = pay("s-prompt", "{\"amount\":10}");
    JsonNode approval = awaitApproval("s-prompt");
    StringWriter screen = new StringWriter();
    ApprovalPrompt prompt =
        new ApprovalPrompt(
            new BufferedReader(
                new StringReader(
                    "maybe\ne\n{\"amount\":\"x\"}\ne\n{amount:1}\nedit\n{\"amount\": 2}\n")),
            new PrintWriter(screen, true),
            client);

    prompt.ask(approval);

    String id = approval.path("approval_id").asText();
    assertThat(screen.toString())
        .startsWith(
            "pay@1.0.0 is held for approval "
                + id
                + " (require-approval pay@* (flag --require-approval))\nargs: {\n  \"amount\": 10\n}\n"
                + "approve? [y/N/e(dit)] ")
        .contains(
            "the args do not fit the input schema of pay@1.0.0: /amount: expected"
                + " number, got string; approval "
                + id
                + " is still waiting\n")
        .contains("approve? [y/N/e(dit)] answer y (approve), n (deny) or e (edit the args)\n")
        .contains("the args is not JSON: ")
        .endsWith("approved " + id + " with the new args\n");
    CallReply done = reply.get(30, TimeUnit.SECONDS);
    assertThat(done.json().path("payload").toString()).isEqualTo("{\"amount\":2}");
  }
}
