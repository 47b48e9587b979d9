package dev.phrony.worker.dev;

import static dev.phrony.worker.dev.SessionHub.msg;

import com.fasterxml.jackson.databind.JsonNode;
import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.AgentRef;
import dev.phrony.runtime.v1.RunSessionInteractiveApprovalRequired;
import dev.phrony.runtime.v1.RunSessionInteractiveToolCall;
import dev.phrony.runtime.v1.RunSessionInteractiveToolResult;
import dev.phrony.worker.dev.SessionCalls.Cancelled;
import dev.phrony.worker.dev.SessionCalls.TurnFailed;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Outcome;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;

/**
 * The turns of dev's own call sessions, which {@code call TOOL ARGS} starts: no model, each turn
 * one tool call given as the turn's input ({@link CallRequest}'s JSON: {@code tool}, {@code
 * version}, {@code args}, {@code deadline_ms}), dispatched as {@link CallService#submit(Call,
 * Duration, CallService.Watch)} dispatches it (held by {@code --require-approval}'s gate, bounded
 * by its deadline). Its events are the runtime's: {@code approval_required} when held, {@code
 * tool_call} as it is dispatched, {@code tool_result} (the payload, or the tool error's {@code
 * code: message}), {@code awaiting_input}; a dispatch error fails the session with its {@code kind:
 * message} and, on a line of its own, {@code hint: ...} when dev sees the cause.
 *
 * <p>The agent ref {@link #REF} names it on {@code RunSessionInteractive}. Unlike the runtime's, a
 * start that names a {@code session_id} with this agent ref makes that session (or adds a turn to
 * it, when it runs): {@code call --session ID}.
 */
final class CallModel implements Session.Model {

  /** The agent ref of dev's call sessions: {@code phrony-worker-dev/call}. */
  static final AgentRef REF =
      AgentRef.newBuilder().setNamespace("phrony-worker-dev").setName("call").build();

  static final String PROVIDER = "none";
  static final String NAME = "call";

  /** Its calls' {@code agent_version_id}: a UUID, as the runtime's are. */
  static final String AGENT_VERSION_ID =
      UUID.nameUUIDFromBytes(
              "phrony-worker-dev:phrony-worker-dev/call".getBytes(StandardCharsets.UTF_8))
          .toString();

  private final String sessionId;
  private final CallService calls;
  private final SessionHub hub;
  private final InstantSource clock;

  CallModel(String sessionId, CallService calls, SessionHub hub, InstantSource clock) {
    this.sessionId = sessionId;
    this.calls = calls;
    this.hub = hub;
    this.clock = clock;
  }

  /** Whether {@code ref} names dev's call sessions. */
  static boolean names(AgentRef ref) {
    return ref.getNamespace().strip().equals(REF.getNamespace())
        && ref.getName().strip().equals(REF.getName());
  }

  /**
   * The call a turn's input asks for.
   *
   * @throws IllegalArgumentException saying what is wrong with it
   */
  static CallRequest request(String inputJson) {
    // A user_message's text arrives as {"message": TEXT}: the call is the text.
    JsonNode input = SessionCalls.parse(inputJson);
    String json =
        input.has("tool") || !input.path("message").isTextual()
            ? inputJson
            : input.path("message").textValue();
    return CallRequest.fromJson(json.getBytes(StandardCharsets.UTF_8));
  }

  @Override
  public void turn(String inputJson, int turn) throws TurnFailed, Cancelled, InterruptedException {
    Instant began = clock.instant();
    CallRequest request;
    try {
      request = request(inputJson);
    } catch (IllegalArgumentException e) {
      throw new TurnFailed("call input: " + e.getMessage());
    }
    Call call =
        new Call(
            Call.deriveCallId(sessionId, AGENT_VERSION_ID, turn, 0),
            sessionId,
            AGENT_VERSION_ID,
            turn,
            request.tool(),
            request.version(),
            request.args().getBytes(StandardCharsets.UTF_8),
            "",
            0);
    Set<String> held = ConcurrentHashMap.newKeySet();
    CallService.Watch watch =
        new CallService.Watch() {
          @Override
          public void held(Approvals.Pending pending) {
            held.add(pending.approvalId());
            hub.hold(approvalRequired(pending));
          }

          @Override
          public void dispatching(Call dispatched) {
            held.forEach(hub::release);
            hub.publish(
                msg(
                    b ->
                        b.setToolCall(
                            RunSessionInteractiveToolCall.newBuilder()
                                .setCallId(dispatched.callId())
                                .setTool(dispatched.tool())
                                .setVersion(dispatched.version())
                                .setArgs(ByteString.copyFrom(dispatched.args())))),
                SessionHub.AWAITING_TOOL);
          }
        };
    CallService.Completed done;
    try {
      done = calls.submit(call, request.deadline(), watch).get();
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    } catch (IllegalStateException e) {
      throw new TurnFailed("runtime shutting down");
    } finally {
      held.forEach(hub::release);
    }
    if (hub.cancelling()) {
      throw new Cancelled();
    }
    CallReply reply = CallReply.fromJson(CallReply.toJson(done));
    RunSessionInteractiveToolResult.Builder result =
        RunSessionInteractiveToolResult.newBuilder().setCallId(call.callId());
    switch (done.outcome()) {
      case Outcome.Result r -> result.setPayload(ByteString.copyFrom(r.payload()));
      case Outcome.ToolError e -> result.setErrorMessage(reply.errorLine());
      case Outcome.DispatchError e -> {
        if (e.kind() == Outcome.Kind.CANCELLED) {
          throw new Cancelled();
        }
        throw new TurnFailed(
            reply.errorLine() + (reply.hint() == null ? "" : "\nhint: " + reply.hint()));
      }
    }
    hub.publish(msg(b -> b.setToolResult(result)), SessionHub.RUNNING);
    hub.finishTurn("", "", "end_turn", Duration.between(began, clock.instant()));
  }

  /** A call {@code --require-approval} holds, as the runtime announces an approval. */
  static RunSessionInteractiveApprovalRequired approvalRequired(Approvals.Pending p) {
    return RunSessionInteractiveApprovalRequired.newBuilder()
        .setApprovalId(p.approvalId())
        .setCallId(p.call().callId())
        .setTool(p.call().tool())
        .setVersion(p.call().version())
        .setArgs(ByteString.copyFrom(p.call().args()))
        .setReason(p.reason())
        .setApprovalsRequired(p.approvalsRequired())
        .setApprovalsReceived(p.approvalsReceived())
        .setExpiresAt(p.expiresAt().map(ApprovalBook::rfc3339).orElse(""))
        .build();
  }
}
