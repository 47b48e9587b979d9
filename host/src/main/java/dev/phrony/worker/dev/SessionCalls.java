package dev.phrony.worker.dev;

import static dev.phrony.worker.dev.SessionHub.msg;

import com.fasterxml.jackson.databind.JsonNode;
import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.RunSessionInteractiveToolCall;
import dev.phrony.runtime.v1.RunSessionInteractiveToolResult;
import dev.phrony.worker.agent.DevAgent;
import dev.phrony.worker.agent.Policies;
import dev.phrony.worker.agent.PolicyRule;
import dev.phrony.worker.agent.StubScript;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Outcome;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * A {@link Session}'s tool calls, as the runtime's executor runs a completion's ({@code
 * internal/executor/tool_dispatch.go}): concurrently, each decided by the agent's policies first (a
 * denial is a tool error, never dispatched; {@code require_approval} holds it for a human), then
 * dispatched to a worker as a real {@code invoke}, announced by {@code tool_call} right before and
 * answered by {@code tool_result}.
 */
final class SessionCalls {

  /** Classes whose call may be answered a tool error when its outcome is unknown. */
  private static final Set<String> SAFE_WHEN_INDETERMINATE =
      Set.of("", "read_only", "idempotent_write");

  /** A turn that cannot go on: the session fails with {@code message}. */
  static final class TurnFailed extends Exception {
    private static final long serialVersionUID = 1L;

    TurnFailed(String message) {
      super(message, null, false, false);
    }
  }

  /** The session was cancelled while the turn ran. */
  static final class Cancelled extends Exception {
    private static final long serialVersionUID = 1L;

    Cancelled() {
      super("cancelled", null, false, false);
    }
  }

  private final String id;
  private final DevAgent agent;
  private final CallService calls;
  private final ApprovalBook approvals;
  private final SessionHub hub;
  private final BooleanSupplier cancelled;
  private final Consumer<String> console;

  /**
   * @param id the session's
   * @param cancelled whether the session was cancelled (checked before each step)
   * @param console where the {@code approval_required} and {@code tool_denied} lines go
   */
  SessionCalls(
      String id,
      DevAgent agent,
      CallService calls,
      ApprovalBook approvals,
      SessionHub hub,
      BooleanSupplier cancelled,
      Consumer<String> console) {
    this.id = id;
    this.agent = agent;
    this.calls = calls;
    this.approvals = approvals;
    this.hub = hub;
    this.cancelled = cancelled;
    this.console = console;
  }

  /** The completion's tool calls, concurrently; the first failure fails the turn. */
  void dispatchAll(List<StubScript.ToolCall> toolCalls, int turn)
      throws TurnFailed, Cancelled, InterruptedException {
    List<CompletableFuture<Void>> running = new ArrayList<>();
    for (int i = 0; i < toolCalls.size(); i++) {
      StubScript.ToolCall c = toolCalls.get(i);
      int index = i;
      CompletableFuture<Void> done = new CompletableFuture<>();
      Thread.ofVirtual()
          .name("session-" + id + "-call-" + index)
          .start(
              () -> {
                try {
                  toolCall(c, turn, index);
                  done.complete(null);
                } catch (Throwable t) {
                  done.completeExceptionally(t);
                }
              });
      running.add(done);
    }
    for (CompletableFuture<Void> r : running) {
      try {
        r.get();
      } catch (ExecutionException e) {
        switch (e.getCause()) {
          case TurnFailed f -> throw f;
          case Cancelled c -> throw c;
          case InterruptedException ie -> throw new Cancelled();
          case RuntimeException re -> throw re;
          default -> throw new IllegalStateException(e.getCause());
        }
      }
    }
  }

  /** One tool call: policies, perhaps a human, then the worker. */
  private void toolCall(StubScript.ToolCall c, int turn, int index)
      throws TurnFailed, Cancelled, InterruptedException {
    Optional<DevAgent.Binding> found = agent.binding(c.name());
    if (found.isEmpty()) {
      // The runtime could not build the call (no binding by that name): no call id yet.
      toolResult("", null, "unknown tool \"" + c.name() + "\"");
      return;
    }
    DevAgent.Binding binding = found.get();
    String callId = Call.deriveCallId(id, agent.agentVersionId(), turn, index);
    String args = c.args();
    Policies.Decision decision = agent.policies().evaluate(binding.tool(), parse(args));
    while (decision instanceof Policies.RequireApproval held) {
      PolicyRule rule = held.rule();
      ApprovalBook.Verdict verdict = await(binding, callId, args, rule);
      if (!verdict.approved()) {
        if (rule.approval().onReject().equals("fail")) {
          throw new TurnFailed(
              verdict.comment().isBlank() ? "tool call denied" : verdict.comment().strip());
        }
        toolResult(callId, null, "tool call " + callId + " denied");
        return;
      }
      args = verdict.args().filter(a -> !a.isBlank()).orElse(args);
      if (!rule.approval().onModify().equals("revalidate")) {
        decision = new Policies.Allow();
        break;
      }
      decision = agent.policies().evaluate(binding.tool(), parse(args));
    }
    if (decision instanceof Policies.Deny d) {
      console.accept(
          "tool_denied call_id="
              + callId
              + " tool="
              + binding.key()
              + " reason="
              + d.message()
              + " (a policy: no worker sees it)");
      toolResult(callId, null, d.message());
      return;
    }
    String sent = args;
    hub.publish(
        msg(
            b ->
                b.setToolCall(
                    RunSessionInteractiveToolCall.newBuilder()
                        .setCallId(callId)
                        .setTool(binding.tool())
                        .setVersion(binding.version())
                        .setArgs(ByteString.copyFromUtf8(sent)))),
        SessionHub.AWAITING_TOOL);
    Call call =
        new Call(
            callId,
            id,
            agent.agentVersionId(),
            turn,
            binding.tool(),
            binding.version(),
            sent.getBytes(StandardCharsets.UTF_8),
            binding.sideEffectClass(),
            0);
    CallService.Completed done;
    try {
      done = calls.submit(call).get();
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    } catch (IllegalStateException e) {
      throw new TurnFailed("runtime shutting down");
    }
    if (cancelled.getAsBoolean()) {
      throw new Cancelled();
    }
    switch (done.outcome()) {
      case Outcome.Result r -> toolResult(callId, r.payload(), "");
      case Outcome.ToolError e -> toolResult(callId, null, e.text());
      case Outcome.DispatchError e -> {
        if (e.kind() == Outcome.Kind.CANCELLED) {
          throw new Cancelled();
        }
        if (e.kind() == Outcome.Kind.INDETERMINATE
            && SAFE_WHEN_INDETERMINATE.contains(binding.sideEffectClass())) {
          toolResult(callId, null, e.text());
          return;
        }
        // The runtime's route for the rest is to fail the turn (escalating to a human is for
        // policies dev does not run).
        throw new TurnFailed(e.text());
      }
    }
  }

  /** Holds the call for a human: {@code approval_required}, then the decision. */
  private ApprovalBook.Verdict await(
      DevAgent.Binding binding, String callId, String args, PolicyRule rule)
      throws Cancelled, InterruptedException {
    ApprovalBook.Hold hold =
        approvals.open(
            new ApprovalBook.Subject(
                id,
                agent.namespace(),
                agent.name(),
                callId,
                binding.tool(),
                binding.version(),
                args),
            rule);
    if (cancelled.getAsBoolean()) {
      throw new Cancelled();
    }
    hub.hold(hold.event());
    console.accept(
        "approval_required approval_id="
            + hold.approvalId()
            + " call_id="
            + callId
            + " tool="
            + binding.key()
            + " policy="
            + rule.name()
            + " answer: DecideApproval, or tool_approval on the session's stream");
    try {
      return hold.verdict().get();
    } catch (CancellationException e) {
      throw new Cancelled();
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    } finally {
      hub.release(hold.approvalId());
    }
  }

  private void toolResult(String callId, byte[] payload, String error) throws Cancelled {
    if (cancelled.getAsBoolean()) {
      throw new Cancelled();
    }
    RunSessionInteractiveToolResult.Builder r =
        RunSessionInteractiveToolResult.newBuilder().setCallId(callId).setErrorMessage(error);
    if (payload != null) {
      r.setPayload(ByteString.copyFrom(payload));
    }
    hub.publish(msg(b -> b.setToolResult(r)), SessionHub.RUNNING);
  }

  static JsonNode parse(String json) {
    try {
      return Json.MAPPER.readTree(json);
    } catch (IOException e) {
      return Json.MAPPER.createObjectNode();
    }
  }
}
