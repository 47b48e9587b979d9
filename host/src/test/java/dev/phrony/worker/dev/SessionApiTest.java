package dev.phrony.worker.dev;

import static dev.phrony.runtime.v1.RunSessionInteractiveServerMsg.BodyCase.APPROVAL_REQUIRED;
import static dev.phrony.runtime.v1.RunSessionInteractiveServerMsg.BodyCase.AWAITING_INPUT;
import static dev.phrony.runtime.v1.RunSessionInteractiveServerMsg.BodyCase.CANCELLED;
import static dev.phrony.runtime.v1.RunSessionInteractiveServerMsg.BodyCase.COMPLETED;
import static dev.phrony.runtime.v1.RunSessionInteractiveServerMsg.BodyCase.FAILED;
import static dev.phrony.runtime.v1.RunSessionInteractiveServerMsg.BodyCase.SESSION_STARTED;
import static dev.phrony.runtime.v1.RunSessionInteractiveServerMsg.BodyCase.TEXT_DELTA;
import static dev.phrony.runtime.v1.RunSessionInteractiveServerMsg.BodyCase.TOOL_CALL;
import static dev.phrony.runtime.v1.RunSessionInteractiveServerMsg.BodyCase.TOOL_RESULT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.runtime.v1.Approval;
import dev.phrony.runtime.v1.ApprovalDecision;
import dev.phrony.runtime.v1.CancelSessionRequest;
import dev.phrony.runtime.v1.DecideApprovalRequest;
import dev.phrony.runtime.v1.DecideApprovalResponse;
import dev.phrony.runtime.v1.GetApprovalRequest;
import dev.phrony.runtime.v1.GetVersionRequest;
import dev.phrony.runtime.v1.ListApprovalsRequest;
import dev.phrony.runtime.v1.RunSessionInteractiveApprovalRequired;
import dev.phrony.runtime.v1.RunSessionInteractiveToolCall;
import dev.phrony.runtime.v1.RunSessionInteractiveToolResult;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.worker.agent.DevAgents;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.contract.Fixtures;
import dev.phrony.worker.testkit.Await;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The runtime's session API as dev serves it: scenario agents in the runtime's layout ({@code
 * src/test/resources/scenarios/}: the stub model's {@code stub-script.json}, Tool and Policy
 * documents) run against a worker serving {@code payments.process-payment@1.0.0}, driven over gRPC
 * with stubs generated from the runtime's proto; each test checks the events in order and how often
 * the worker was invoked.
 */
class SessionApiTest {

  /** Pays; a payment to "Slow Bank" takes until the test releases it (or it is cancelled). */
  private final AtomicInteger invoked = new AtomicInteger();

  private final CountDownLatch slowEntered = new CountDownLatch(1);
  private final CountDownLatch slowRelease = new CountDownLatch(1);
  private final AtomicBoolean slowInterrupted = new AtomicBoolean();

  private final StringWriter console = new StringWriter();
  private DevServer dev;
  private ManagedChannel channel;

  @BeforeEach
  void start() {
    DevFixture.Handler pay =
        DevFixture.Handler.of(
            "payments.process-payment",
            "1.0.0",
            8,
            call -> {
              invoked.incrementAndGet();
              String args = new String(call.argsBytes(), StandardCharsets.UTF_8);
              if (args.contains("Slow Bank")) {
                slowEntered.countDown();
                try {
                  slowRelease.await();
                } catch (InterruptedException e) {
                  slowInterrupted.set(true);
                  throw e;
                }
              }
              return ToolResult.json("{\"status\":\"succeeded\",\"paid\":" + args + "}");
            });
    DevAgents agents =
        DevAgents.load(
            List.of(
                scenario("01-auto-dispatch"),
                scenario("02-approval-threshold"),
                scenario("03-deny-high"),
                scenario("04-slow-payment"),
                scenario("05-two-completions")));
    dev =
        DevServer.start(
            new DevServer.Options(
                0,
                0,
                Optional.of(DevFixture.host(DevFixture.catalog(pay))),
                ApprovalPolicy.NONE,
                agents));
    dev.showEvents(new PrintWriter(console, true));
    channel = NettyChannelBuilder.forTarget(dev.runtimeTarget()).usePlaintext().build();
  }

  @AfterEach
  void stop() throws InterruptedException {
    slowRelease.countDown();
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    dev.close();
  }

  static Path scenario(String name) {
    return Fixtures.dir().resolveSibling("scenarios").resolve(name);
  }

  @Test
  void a_scripted_agent_calls_the_worker_and_completes_when_the_client_closes() {
    try (SessionClient s =
        SessionClient.start(channel, "demo", "payment-agent-auto", "{\"message\":\"Pay Acme\"}")) {
      var started = s.next(SESSION_STARTED).getSessionStarted();
      assertThat(UUID.fromString(started.getAgentVersionId()))
          .as("a UUID, as the runtime's agent_version_id")
          .isEqualTo(
              UUID.nameUUIDFromBytes(
                  "phrony-worker-dev:demo/payment-agent-auto@1.0.0"
                      .getBytes(StandardCharsets.UTF_8)));
      assertThat(started.getModelProvider()).isEqualTo("stub");
      assertThat(started.getModelName()).isEqualTo("scripted");
      assertThat(s.next(TEXT_DELTA).getTextDelta().getDelta()).isEqualTo("Paying Acme Corp. ");
      RunSessionInteractiveToolCall call = s.next(TOOL_CALL).getToolCall();
      assertThat(call.getCallId())
          .isEqualTo(started.getSessionId() + ":" + started.getAgentVersionId() + ":1:0");
      assertThat(call.getTool()).isEqualTo("payments.process-payment");
      assertThat(call.getVersion()).isEqualTo("1.0.0");
      assertThat(call.getArgs().toStringUtf8()).contains("\"payee\":\"Acme Corp\"");
      RunSessionInteractiveToolResult result = s.next(TOOL_RESULT).getToolResult();
      assertThat(result.getCallId()).isEqualTo(call.getCallId());
      assertThat(result.getErrorMessage()).isEmpty();
      assertThat(result.getPayload().toStringUtf8()).contains("\"status\":\"succeeded\"");
      assertThat(s.next(TEXT_DELTA).getTextDelta().getDelta())
          .isEqualTo("Paid 120 USD to Acme Corp.");
      var awaiting = s.next(AWAITING_INPUT).getAwaitingInput();
      assertThat(awaiting.getStopReason()).isEqualTo("end_turn");
      assertThat(awaiting.getStats().getTurn()).isEqualTo(1);

      s.closeSend();
      var completed = s.next(COMPLETED).getCompleted();
      assertThat(completed.getStopReason()).isEqualTo("end_turn");
      assertThat(completed.getOutput().toStringUtf8())
          .contains("\"message\":\"Paying Acme Corp. Paid 120 USD to Acme Corp.\"");
      assertThat(s.ended().getCode()).isEqualTo(Status.Code.OK);
      assertThat(invoked).hasValue(1);
    }
  }

  @Test
  void calls_of_a_turns_later_completion_number_from_0_as_the_runtime_does_so_its_ledger_answers() {
    try (SessionClient s =
        SessionClient.start(channel, "demo", "payment-agent-twice", "{\"message\":\"Pay\"}")) {
      var started = s.next(SESSION_STARTED).getSessionStarted();
      String first = s.next(TOOL_CALL).getToolCall().getCallId();
      String paid = s.next(TOOL_RESULT).getToolResult().getPayload().toStringUtf8();
      RunSessionInteractiveToolCall second = s.next(TOOL_CALL).getToolCall();
      RunSessionInteractiveToolResult again = s.next(TOOL_RESULT).getToolResult();
      s.next(TEXT_DELTA);
      s.next(AWAITING_INPUT);

      // The runtime's executor numbers each completion's calls from 0 within the turn, so both
      // calls are SESSION:AGENT_VERSION:1:0, and its ledger answers the second with the first's
      // result: the worker sees one invoke (internal/executor, internal/tooldispatch).
      assertThat(first)
          .isEqualTo(started.getSessionId() + ":" + started.getAgentVersionId() + ":1:0");
      assertThat(second.getCallId()).isEqualTo(first);
      assertThat(second.getArgs().toStringUtf8()).contains("Globex");
      assertThat(again.getPayload().toStringUtf8()).isEqualTo(paid);
      assertThat(invoked).hasValue(1);
    }
  }

  @Test
  void a_call_session_makes_one_call_per_turn_with_the_runtimes_events_and_completes_on_close() {
    try (SessionClient s =
        SessionClient.startCall(
            channel,
            "{\"tool\":\"payments.process-payment\",\"version\":\"1.0.0\","
                + "\"args\":{\"amount\":5}}")) {
      var started = s.next(SESSION_STARTED).getSessionStarted();
      assertThat(UUID.fromString(started.getAgentVersionId())).isNotNull();
      RunSessionInteractiveToolCall call = s.next(TOOL_CALL).getToolCall();
      assertThat(call.getCallId())
          .isEqualTo(started.getSessionId() + ":" + started.getAgentVersionId() + ":1:0");
      assertThat(call.getArgs().toStringUtf8()).isEqualTo("{\"amount\":5}");
      RunSessionInteractiveToolResult result = s.next(TOOL_RESULT).getToolResult();
      assertThat(result.getCallId()).isEqualTo(call.getCallId());
      assertThat(result.getPayload().toStringUtf8()).contains("\"paid\":{\"amount\":5}");
      assertThat(s.next(AWAITING_INPUT).getAwaitingInput().getStopReason()).isEqualTo("end_turn");

      s.say("{\"tool\":\"payments.process-payment\",\"version\":\"1.0.0\",\"args\":{}}");
      assertThat(s.next(TOOL_CALL).getToolCall().getCallId()).endsWith(":2:0");
      s.next(TOOL_RESULT);
      s.next(AWAITING_INPUT);

      s.closeSend();
      s.next(COMPLETED);
      assertThat(s.ended().getCode()).isEqualTo(Status.Code.OK);
      assertThat(invoked).hasValue(2);
    }
    assertThat(console.toString()).doesNotContain("session_started");
  }

  @Test
  void a_call_session_whose_tool_nobody_serves_announces_the_call_and_fails_with_a_hint() {
    try (SessionClient s =
        SessionClient.startCall(channel, "{\"tool\":\"no.such\",\"version\":\"1\"}")) {
      s.next(SESSION_STARTED);
      assertThat(s.next(TOOL_CALL).getToolCall().getTool()).isEqualTo("no.such");
      assertThat(s.next(FAILED).getFailed().getMessage())
          .startsWith(
              "no_handler: no handler registered for tool\nhint: no worker serves no.such@1;"
                  + " served: ")
          .contains("payments.process-payment@1.0.0");
      assertThat(s.ended().getCode()).isEqualTo(Status.Code.OK);
    }
    assertThat(invoked).hasValue(0);
  }

  @Test
  void a_call_above_the_threshold_waits_for_DecideApproval_and_then_reaches_the_worker() {
    var rpc = RuntimeGrpc.newBlockingStub(channel);
    try (SessionClient s =
        SessionClient.start(channel, "demo", "payment-agent-hitl", "{\"message\":\"Pay\"}")) {
      var started = s.next(SESSION_STARTED).getSessionStarted();
      String session = started.getSessionId();
      s.next(TOOL_CALL); // 200: under the threshold, not held
      s.next(TOOL_RESULT);
      s.next(TEXT_DELTA);
      s.next(AWAITING_INPUT);
      s.say("Now Acme");
      RunSessionInteractiveApprovalRequired held = s.next(APPROVAL_REQUIRED).getApprovalRequired();
      // The second user turn's first call: SESSION:AGENT_VERSION:TURN:INDEX.
      assertThat(held.getCallId()).isEqualTo(session + ":" + started.getAgentVersionId() + ":2:0");
      assertThat(held.getTool()).isEqualTo("payments.process-payment");
      assertThat(held.getArgs().toStringUtf8()).contains("1500");
      assertThat(held.getReason())
          .isEqualTo("Payment amount exceeds 1000; confirm before processing.");
      assertThat(held.getRoute()).isEqualTo("finance");
      assertThat(held.getPolicyName()).isEqualTo("payment-require-approval");
      assertThat(held.getApprovalsRequired()).isEqualTo(1);
      assertThat(invoked).hasValue(1);

      List<Approval> pending =
          rpc.listApprovals(
                  ListApprovalsRequest.newBuilder()
                      .setStatus("pending")
                      .setAgentNamespace("demo")
                      .setAgentName("payment-agent-hitl")
                      .build())
              .getApprovalsList();
      assertThat(pending).extracting(Approval::getId).containsExactly(held.getApprovalId());
      assertThat(pending.getFirst().getSessionId()).isEqualTo(session);

      DecideApprovalResponse decided =
          rpc.decideApproval(
              DecideApprovalRequest.newBuilder()
                  .setApprovalId(held.getApprovalId())
                  .setDecision(ApprovalDecision.APPROVAL_DECISION_APPROVE)
                  .setComment("looks right")
                  .setActor("alice")
                  .build());
      assertThat(decided.getStatus()).isEqualTo("approved");
      assertThat(decided.getApprovalsReceived()).isEqualTo(1);

      assertThat(s.next(TOOL_CALL).getToolCall().getCallId()).isEqualTo(held.getCallId());
      assertThat(s.next(TOOL_RESULT).getToolResult().getErrorMessage()).isEmpty();
      s.next(TEXT_DELTA);
      s.next(AWAITING_INPUT);
      assertThat(invoked).hasValue(2);

      Approval row =
          rpc.getApproval(
              GetApprovalRequest.newBuilder().setApprovalId(held.getApprovalId()).build());
      assertThat(row.getStatus()).isEqualTo("approved");
      assertThat(row.getDecidedBy()).isEqualTo("alice");
      assertThat(row.getVotesList())
          .singleElement()
          .satisfies(
              v -> {
                assertThat(v.getDecision()).isEqualTo("approved");
                assertThat(v.getComment()).isEqualTo("looks right");
              });
      // A decision on one already decided changes nothing and says its status.
      assertThat(
              rpc.decideApproval(
                      DecideApprovalRequest.newBuilder()
                          .setApprovalId(held.getApprovalId())
                          .setDecision(ApprovalDecision.APPROVAL_DECISION_REJECT)
                          .setActor("bob")
                          .build())
                  .getStatus())
          .isEqualTo("approved");
    }
  }

  @Test
  void a_denial_on_the_stream_ends_the_held_call_with_a_tool_error_and_no_invoke() {
    try (SessionClient s =
        SessionClient.start(channel, "demo", "payment-agent-hitl", "{\"message\":\"Pay\"}")) {
      s.next(SESSION_STARTED);
      s.next(TOOL_CALL);
      s.next(TOOL_RESULT);
      s.next(TEXT_DELTA);
      s.next(AWAITING_INPUT);
      s.say("Now Acme");
      RunSessionInteractiveApprovalRequired held = s.next(APPROVAL_REQUIRED).getApprovalRequired();

      s.decide(held.getApprovalId(), false, "too much");

      RunSessionInteractiveToolResult result = s.next(TOOL_RESULT).getToolResult();
      assertThat(result.getCallId()).isEqualTo(held.getCallId());
      assertThat(result.getErrorMessage()).isEqualTo("tool call " + held.getCallId() + " denied");
      s.next(TEXT_DELTA);
      s.next(AWAITING_INPUT);
      assertThat(invoked).hasValue(1); // the 200 only
      Approval row =
          RuntimeGrpc.newBlockingStub(channel)
              .getApproval(
                  GetApprovalRequest.newBuilder().setApprovalId(held.getApprovalId()).build());
      assertThat(row.getStatus()).isEqualTo("denied");
      assertThat(row.getDecidedBy()).isEqualTo("interactive");
    }
  }

  @Test
  void a_deny_policy_answers_a_tool_error_before_dispatch_and_the_worker_never_sees_the_call() {
    try (SessionClient s =
        SessionClient.start(channel, "demo", "payment-agent-deny", "{\"message\":\"Pay 800\"}")) {
      String session = s.next(SESSION_STARTED).getSessionStarted().getSessionId();
      // No tool_call: the runtime announces only calls it dispatches.
      RunSessionInteractiveToolResult result = s.next(TOOL_RESULT).getToolResult();
      assertThat(result.getCallId()).endsWith(":1:0").startsWith(session + ":");
      assertThat(result.getErrorMessage()).isEqualTo("Payment amount exceeds 500.");
      assertThat(s.next(TEXT_DELTA).getTextDelta().getDelta())
          .isEqualTo("Could not process payment.");
      s.next(AWAITING_INPUT);
      s.closeSend();
      s.next(COMPLETED);
      assertThat(s.ended().getCode()).isEqualTo(Status.Code.OK);
    }
    assertThat(invoked).hasValue(0);
    Await.until("the end on the console", () -> console.toString().contains("session_ended"));
    assertThat(console.toString())
        .containsPattern("session_started session_id=\\S+ agent=demo/payment-agent-deny@1.0.0")
        .containsPattern(
            "tool_denied call_id=\\S+ tool=payments.process-payment@1.0.0 reason=Payment amount"
                + " exceeds 500. \\(a policy: no worker sees it\\)")
        .containsPattern("session_ended session_id=\\S+ status=completed")
        .doesNotContain("tool_call ");
    assertThat(dev.runtime().events())
        .noneMatch(e -> e.serverMsg() != null && e.serverMsg().hasInvoke());
  }

  @Test
  void cancel_session_while_a_call_runs_cancels_the_call_on_the_worker_and_ends_cancelled()
      throws InterruptedException {
    var rpc = RuntimeGrpc.newBlockingStub(channel);
    try (SessionClient s =
        SessionClient.start(channel, "demo", "payment-agent-slow", "{\"message\":\"Pay\"}")) {
      String session = s.next(SESSION_STARTED).getSessionStarted().getSessionId();
      s.next(TOOL_CALL);
      assertThat(slowEntered.await(20, TimeUnit.SECONDS)).isTrue();

      rpc.cancelSession(CancelSessionRequest.newBuilder().setSessionId(session).build());

      assertThat(s.next(CANCELLED).getCancelled().getSessionEndedAtUnixMs()).isPositive();
      assertThat(s.ended().getCode()).isEqualTo(Status.Code.OK);
      assertThat(s.drained()).isTrue();
      Await.until("the handler is interrupted by the runtime's cancel", slowInterrupted::get);
      assertThat(invoked).hasValue(1);
      assertThatThrownBy(
              () ->
                  rpc.cancelSession(
                      CancelSessionRequest.newBuilder().setSessionId(session).build()))
          .isInstanceOfSatisfying(
              StatusRuntimeException.class,
              e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION));
    }
  }

  @Test
  void a_stream_attached_to_a_running_session_sees_where_it_is_and_every_event_after() {
    try (SessionClient s =
        SessionClient.start(channel, "demo", "payment-agent-slow", "{\"message\":\"Pay\"}")) {
      String session = s.next(SESSION_STARTED).getSessionStarted().getSessionId();
      s.next(TOOL_CALL);
      Await.until("the call runs", () -> slowEntered.getCount() == 0);

      try (SessionClient attached = SessionClient.attach(channel, session)) {
        var started = attached.next(SESSION_STARTED).getSessionStarted();
        assertThat(started.getSessionId()).isEqualTo(session);
        assertThat(started.getSessionEndedAtUnixMs()).isZero();
        assertThat(attached.next(AWAITING_INPUT).getAwaitingInput().getInputBlockedReason())
            .isEqualTo("awaiting_tool");

        slowRelease.countDown();

        for (SessionClient c : List.of(s, attached)) {
          c.next(TOOL_RESULT);
          c.next(TEXT_DELTA);
          c.next(AWAITING_INPUT);
        }
        s.closeSend();
        for (SessionClient c : List.of(s, attached)) {
          c.next(COMPLETED);
          assertThat(c.ended().getCode()).isEqualTo(Status.Code.OK);
        }
        assertThat(attached.seen())
            .containsExactly(
                SESSION_STARTED,
                AWAITING_INPUT,
                TOOL_RESULT,
                TEXT_DELTA,
                AWAITING_INPUT,
                COMPLETED);
      }
      assertThat(invoked).hasValue(1);
    }
  }

  @Test
  void an_agent_not_loaded_is_not_found_and_says_which_are() {
    try (SessionClient s = SessionClient.start(channel, "demo", "nobody", "{}")) {
      Status status = s.ended();
      assertThat(status.getCode()).isEqualTo(Status.Code.NOT_FOUND);
      assertThat(status.getDescription())
          .startsWith("agent demo/nobody is not loaded: dev runs the agents given with --agent")
          .contains("demo/payment-agent-auto@1.0.0");
    }
  }

  @Test
  void get_version_and_health_answer_and_the_runtimes_other_rpcs_say_dev_does_not_serve_them() {
    assertThat(
            RuntimeGrpc.newBlockingStub(channel)
                .getVersion(GetVersionRequest.getDefaultInstance())
                .getVersion())
        .isNotEmpty();
    assertThat(
            HealthGrpc.newBlockingStub(channel)
                .check(HealthCheckRequest.getDefaultInstance())
                .getStatus())
        .isEqualTo(HealthCheckResponse.ServingStatus.SERVING);

    MethodDescriptor.Marshaller<InputStream> raw =
        new MethodDescriptor.Marshaller<>() {
          @Override
          public InputStream stream(InputStream value) {
            return value;
          }

          @Override
          public InputStream parse(InputStream stream) {
            return stream;
          }
        };
    MethodDescriptor<InputStream, InputStream> listSessions =
        MethodDescriptor.<InputStream, InputStream>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName("phrony.runtime.v1.Runtime/ListSessions")
            .setRequestMarshaller(raw)
            .setResponseMarshaller(raw)
            .build();
    assertThatThrownBy(
            () ->
                ClientCalls.blockingUnaryCall(
                    channel,
                    listSessions,
                    CallOptions.DEFAULT,
                    new ByteArrayInputStream(new byte[0])))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNIMPLEMENTED);
              assertThat(e.getStatus().getDescription())
                  .startsWith("phrony-worker dev serves only Work, GetVersion,")
                  .contains("ListSessions needs the Phrony runtime itself");
            });
  }
}
