package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.InteractiveConversationMessage;
import dev.phrony.runtime.v1.InteractiveSessionStats;
import dev.phrony.runtime.v1.RunSessionInteractiveApprovalRequired;
import dev.phrony.runtime.v1.RunSessionInteractiveAwaitingInput;
import dev.phrony.runtime.v1.RunSessionInteractiveCancelled;
import dev.phrony.runtime.v1.RunSessionInteractiveCompleted;
import dev.phrony.runtime.v1.RunSessionInteractiveFailed;
import dev.phrony.runtime.v1.RunSessionInteractiveServerMsg;
import dev.phrony.runtime.v1.RunSessionInteractiveSessionStarted;
import dev.phrony.runtime.v1.RunSessionInteractiveTextDelta;
import dev.phrony.runtime.v1.RunSessionInteractiveToolCall;
import dev.phrony.runtime.v1.RunSessionInteractiveToolResult;
import dev.phrony.worker.agent.DevAgent;
import dev.phrony.worker.agent.Policies;
import dev.phrony.worker.agent.PolicyRule;
import dev.phrony.worker.agent.StubScript;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Outcome;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One interactive session of a {@link DevAgent}, run as the runtime runs one ({@code
 * internal/core/run_session_interactive*.go}, {@code internal/executor}): each user turn asks the
 * scripted model for completions until one ends without {@code tool_use}; a completion's tool calls
 * run concurrently, each decided by the agent's policies first (a denial ends it with a tool error,
 * an approval holds it for a human), then dispatched to a worker as a real {@code invoke}.
 *
 * <p>Events, in the runtime's order: {@code session_started}; per turn {@code text_delta}s, and per
 * call {@code approval_required} (when held), {@code tool_call} (right before its dispatch) and
 * {@code tool_result}; {@code awaiting_input} after the turn. It ends {@code completed} when the
 * stream that started it closes its side after a turn, {@code failed} when a turn fails (the
 * script's {@code failed}, a dispatch the runtime fails on, a denial with {@code on_reject: fail}),
 * or {@code cancelled} by {@code CancelSession}. Streams that attach see the same events from then
 * on; closing one only unsubscribes it.
 *
 * <p>Threads: one virtual thread drives the session (its turns), one per tool call; events are
 * published under the session's lock, so every subscriber sees them in one order.
 */
final class Session {
  private static final Logger log = LoggerFactory.getLogger(Session.class);

  // The runtime's session statuses (model.SessionStatus*).
  static final String RUNNING = "running";
  static final String AWAITING_TOOL = "awaiting_tool";
  static final String AWAITING_APPROVAL = "awaiting_approval";
  static final String AWAITING_INPUT = "awaiting_input";
  static final String COMPLETED = "completed";
  static final String FAILED = "failed";
  static final String CANCELLED = "cancelled";

  private static final Set<String> ENDED = Set.of(COMPLETED, FAILED, CANCELLED);

  /** Classes whose call may be answered a tool error when its outcome is unknown. */
  private static final Set<String> SAFE_WHEN_INDETERMINATE =
      Set.of("", "read_only", "idempotent_write");

  /** What the driver waits for between turns. */
  private sealed interface Input {}

  private record UserMessage(String inputJson) implements Input {}

  /** The starting stream closed its side: complete once idle. */
  private record Closed() implements Input {}

  private record Wake() implements Input {}

  /** A turn that cannot go on: the session fails with {@code message}. */
  private static final class TurnFailed extends Exception {
    private static final long serialVersionUID = 1L;

    TurnFailed(String message) {
      super(message, null, false, false);
    }
  }

  /** The session was cancelled while the turn ran. */
  private static final class Cancelled extends Exception {
    private static final long serialVersionUID = 1L;

    Cancelled() {
      super("cancelled", null, false, false);
    }
  }

  final String id;
  final DevAgent agent;
  final Instant startedAt;
  private final CallService calls;
  private final ApprovalBook approvals;
  private final InstantSource clock;
  private final Consumer<String> console;
  private final LinkedBlockingQueue<Input> inputs = new LinkedBlockingQueue<>();

  // Guarded by itself: the subscribers, and everything a subscriber that attaches is shown.
  private final Object lock = new Object();
  private final List<StreamObserver<RunSessionInteractiveServerMsg>> subscribers =
      new ArrayList<>();
  private final Map<String, RunSessionInteractiveApprovalRequired> held = new LinkedHashMap<>();
  private final List<InteractiveConversationMessage> history = new ArrayList<>();
  private String status = RUNNING;
  private int turns;
  private String lastStopReason = "";
  private String lastOutput = "";
  private String error = "";
  private Instant endedAt;

  private volatile boolean cancelled;
  private volatile Thread driver;

  /** Completions the script has answered (the driver's). */
  private int completions;

  /**
   * @param console where its lines go ({@code session_started}, approvals, denials, its end)
   */
  Session(
      String id,
      DevAgent agent,
      CallService calls,
      ApprovalBook approvals,
      InstantSource clock,
      Consumer<String> console) {
    this.console = console;
    this.id = id;
    this.agent = agent;
    this.calls = calls;
    this.approvals = approvals;
    this.clock = clock;
    this.startedAt = clock.instant();
  }

  /** Subscribes the starting stream, shows it {@code session_started}, and runs the first turn. */
  void start(StreamObserver<RunSessionInteractiveServerMsg> first, String inputJson) {
    synchronized (lock) {
      subscribers.add(first);
      first.onNext(started(false));
    }
    console.accept(
        "session_started session_id="
            + id
            + " agent="
            + agent.ref()
            + " agent_version_id="
            + agent.agentVersionId());
    inputs.add(new UserMessage(inputJson));
    driver = Thread.ofVirtual().name("session-" + id).start(this::drive);
  }

  /**
   * Subscribes a stream to a running session, after showing it what a late subscriber needs: {@code
   * session_started} with the history, then the held approvals and {@code awaiting_input} (its
   * {@code input_blocked_reason} saying what the session waits for); for an ended session, its end.
   *
   * @return false when the session has ended (the stream was shown its end, and is done)
   */
  boolean attach(StreamObserver<RunSessionInteractiveServerMsg> stream) {
    synchronized (lock) {
      boolean ended = ENDED.contains(status);
      stream.onNext(started(true));
      switch (status) {
        case COMPLETED -> stream.onNext(completed());
        case FAILED ->
            stream.onNext(
                msg(b -> b.setFailed(RunSessionInteractiveFailed.newBuilder().setMessage(error))));
        case CANCELLED -> stream.onNext(cancelledMsg());
        case AWAITING_APPROVAL -> {
          held.values().forEach(a -> stream.onNext(msg(b -> b.setApprovalRequired(a))));
          stream.onNext(awaiting(AWAITING_APPROVAL));
        }
        case AWAITING_TOOL -> stream.onNext(awaiting(AWAITING_TOOL));
        case AWAITING_INPUT -> stream.onNext(awaiting(""));
        default -> {}
      }
      if (!ended) {
        subscribers.add(stream);
      }
      return !ended;
    }
  }

  void unsubscribe(StreamObserver<RunSessionInteractiveServerMsg> stream) {
    synchronized (lock) {
      subscribers.remove(stream);
    }
  }

  /** A user message from any of its streams; refused once it has ended. */
  boolean userMessage(String text) {
    if (isEnded()) {
      return false;
    }
    ObjectNode input = Json.MAPPER.createObjectNode().put("message", text.strip());
    inputs.add(new UserMessage(input.toString()));
    return true;
  }

  /** The starting stream closed its side: the session completes after the turn running now. */
  void clientClosed() {
    inputs.add(new Closed());
  }

  /** The approvals this session holds now, oldest first. */
  List<String> heldApprovals() {
    synchronized (lock) {
      return List.copyOf(held.keySet());
    }
  }

  String status() {
    synchronized (lock) {
      return status;
    }
  }

  boolean isEnded() {
    return ENDED.contains(status());
  }

  /**
   * Cancels it as {@code CancelSession} does: its held approvals are withdrawn, its calls forgotten
   * (workers running them get {@code cancel}), and it ends {@code cancelled}.
   *
   * @return false when it had already ended
   */
  boolean cancel() {
    if (isEnded()) {
      return false;
    }
    cancelled = true;
    approvals.withdraw(id);
    calls.cancelSession(id);
    inputs.add(new Wake());
    Thread d = driver;
    if (d != null) {
      d.interrupt();
    }
    return true;
  }

  // ------------------------------------------------------------------ the driver

  private void drive() {
    try {
      while (true) {
        Input next = inputs.take();
        if (cancelled) {
          throw new Cancelled();
        }
        switch (next) {
          case UserMessage u -> turn(u.inputJson());
          case Closed c -> {
            if (!lastOutput.isEmpty()) {
              end(COMPLETED, completed());
              return;
            }
          }
          case Wake w -> {}
        }
      }
    } catch (Cancelled | InterruptedException e) {
      synchronized (lock) {
        endedAt = clock.instant();
      }
      end(CANCELLED, cancelledMsg());
    } catch (TurnFailed e) {
      synchronized (lock) {
        error = e.getMessage();
        endedAt = clock.instant();
      }
      end(
          FAILED,
          msg(b -> b.setFailed(RunSessionInteractiveFailed.newBuilder().setMessage(error))));
    } catch (RuntimeException e) {
      log.error("session {} failed", id, e);
      synchronized (lock) {
        error = "dev: " + e;
        endedAt = clock.instant();
      }
      end(
          FAILED,
          msg(b -> b.setFailed(RunSessionInteractiveFailed.newBuilder().setMessage(error))));
    }
  }

  /** One user turn: completions until one ends without {@code tool_use}. */
  private void turn(String inputJson) throws TurnFailed, Cancelled, InterruptedException {
    Instant began = clock.instant();
    setStatus(RUNNING);
    int turn;
    synchronized (lock) {
      turn = turns + 1;
    }
    StringBuilder text = new StringBuilder();
    List<List<StubScript.Event>> script = agent.script().turns();
    while (true) {
      if (completions >= script.size()) {
        throw new TurnFailed(
            "unexpected completion call "
                + (completions + 1)
                + " (script has "
                + script.size()
                + " turns)");
      }
      String stop = null;
      List<StubScript.ToolCall> toolCalls = new ArrayList<>();
      for (StubScript.Event e : script.get(completions++)) {
        if (cancelled) {
          throw new Cancelled();
        }
        switch (e) {
          case StubScript.TextDelta t -> {
            if (!t.text().isEmpty()) {
              text.append(t.text());
              publish(
                  msg(
                      b ->
                          b.setTextDelta(
                              RunSessionInteractiveTextDelta.newBuilder().setDelta(t.text()))));
            }
          }
          case StubScript.ToolCall c -> toolCalls.add(c);
          case StubScript.Completed c -> stop = c.stopReason();
          case StubScript.Failed f -> throw new TurnFailed(f.message());
        }
        if (stop != null) {
          break;
        }
      }
      if (stop == null) {
        throw new TurnFailed("model completion ended without a terminal event");
      }
      if (!stop.equals(StubScript.TOOL_USE)) {
        finishTurn(inputJson, text.toString(), stop, Duration.between(began, clock.instant()));
        return;
      }
      if (toolCalls.isEmpty()) {
        throw new TurnFailed("model stopped for tool_use without tool calls");
      }
      // As the runtime's executor does, each completion numbers its calls from 0 within the turn:
      // a later completion's call repeats an earlier call id, and the ledger answers it with that
      // call's result, as the runtime's does.
      dispatchAll(toolCalls, turn);
    }
  }

  private void finishTurn(String inputJson, String text, String stopReason, Duration took) {
    synchronized (lock) {
      String userText = userText(inputJson);
      if (!userText.isEmpty()) {
        history.add(
            InteractiveConversationMessage.newBuilder()
                .setRole("user")
                .setContent(userText)
                .build());
      }
      if (!text.isEmpty()) {
        history.add(
            InteractiveConversationMessage.newBuilder()
                .setRole("assistant")
                .setContent(text)
                .setStopReason(stopReason)
                .setTurnDurationMs(took.toMillis())
                .build());
      }
      turns++;
      lastStopReason = stopReason;
      lastOutput = output(text, stopReason);
      status = AWAITING_INPUT;
      broadcast(awaiting(""));
    }
  }

  /** The completion's tool calls, concurrently; the first failure fails the turn. */
  private void dispatchAll(List<StubScript.ToolCall> toolCalls, int turn)
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
    publish(
        msg(
            b ->
                b.setToolCall(
                    RunSessionInteractiveToolCall.newBuilder()
                        .setCallId(callId)
                        .setTool(binding.tool())
                        .setVersion(binding.version())
                        .setArgs(ByteString.copyFromUtf8(sent)))),
        AWAITING_TOOL);
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
    if (cancelled) {
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
    synchronized (lock) {
      if (cancelled) {
        throw new Cancelled();
      }
      held.put(hold.approvalId(), hold.event());
      status = AWAITING_APPROVAL;
      broadcast(msg(b -> b.setApprovalRequired(hold.event())));
    }
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
      synchronized (lock) {
        held.remove(hold.approvalId());
        if (status.equals(AWAITING_APPROVAL) && held.isEmpty()) {
          status = RUNNING;
        }
      }
    }
  }

  private void toolResult(String callId, byte[] payload, String error) throws Cancelled {
    if (cancelled) {
      throw new Cancelled();
    }
    RunSessionInteractiveToolResult.Builder r =
        RunSessionInteractiveToolResult.newBuilder().setCallId(callId).setErrorMessage(error);
    if (payload != null) {
      r.setPayload(ByteString.copyFrom(payload));
    }
    publish(msg(b -> b.setToolResult(r)), RUNNING);
  }

  // ------------------------------------------------------------------ events

  private void publish(RunSessionInteractiveServerMsg m) {
    synchronized (lock) {
      broadcast(m);
    }
  }

  private void publish(RunSessionInteractiveServerMsg m, String newStatus) {
    synchronized (lock) {
      if (!ENDED.contains(status)) {
        status = newStatus;
      }
      broadcast(m);
    }
  }

  private void setStatus(String s) {
    synchronized (lock) {
      status = s;
    }
  }

  /** Sends to every subscriber; a stream that cannot take it is dropped. Hold the lock. */
  private void broadcast(RunSessionInteractiveServerMsg m) {
    if (ENDED.contains(status)) {
      return; // nothing follows the end
    }
    for (StreamObserver<RunSessionInteractiveServerMsg> s : List.copyOf(subscribers)) {
      try {
        s.onNext(m);
      } catch (RuntimeException e) {
        subscribers.remove(s); // its client went away
      }
    }
  }

  /** The last event; every stream then ends OK. */
  private void end(String finalStatus, RunSessionInteractiveServerMsg last) {
    List<StreamObserver<RunSessionInteractiveServerMsg>> streams;
    synchronized (lock) {
      if (ENDED.contains(status)) {
        return;
      }
      if (endedAt == null) {
        endedAt = clock.instant();
      }
      broadcast(last);
      status = finalStatus;
      held.clear();
      streams = List.copyOf(subscribers);
      subscribers.clear();
    }
    approvals.withdraw(id);
    console.accept(
        "session_ended session_id="
            + id
            + " status="
            + finalStatus
            + (finalStatus.equals(FAILED) ? " message=" + error : ""));
    for (StreamObserver<RunSessionInteractiveServerMsg> s : streams) {
      try {
        s.onCompleted();
      } catch (RuntimeException e) {
        // its client went away
      }
    }
  }

  private RunSessionInteractiveServerMsg started(boolean withHistory) {
    var b =
        RunSessionInteractiveSessionStarted.newBuilder()
            .setSessionId(id)
            .setAgentVersionId(agent.agentVersionId())
            .setModelProvider(DevAgent.STUB)
            .setModelName(agent.modelName())
            .setSessionStartedAtUnixMs(startedAt.toEpochMilli());
    if (withHistory) {
      b.addAllHistory(history);
      if (endedAt != null && !status.equals(CANCELLED)) {
        b.setSessionEndedAtUnixMs(endedAt.toEpochMilli());
      }
    }
    return msg(m -> m.setSessionStarted(b));
  }

  private RunSessionInteractiveServerMsg awaiting(String blockedReason) {
    return msg(
        b ->
            b.setAwaitingInput(
                RunSessionInteractiveAwaitingInput.newBuilder()
                    .setStopReason(lastStopReason)
                    .setStats(InteractiveSessionStats.newBuilder().setTurn(turns))
                    .setInputBlockedReason(blockedReason)));
  }

  private RunSessionInteractiveServerMsg completed() {
    return msg(
        b ->
            b.setCompleted(
                RunSessionInteractiveCompleted.newBuilder()
                    .setStopReason(lastStopReason)
                    .setOutput(ByteString.copyFromUtf8(lastOutput.isEmpty() ? "null" : lastOutput))
                    .setStats(InteractiveSessionStats.newBuilder().setTurn(turns))
                    .setSessionEndedAtUnixMs(
                        (endedAt == null ? clock.instant() : endedAt).toEpochMilli())));
  }

  private RunSessionInteractiveServerMsg cancelledMsg() {
    return msg(
        b ->
            b.setCancelled(
                RunSessionInteractiveCancelled.newBuilder()
                    .setSessionEndedAtUnixMs(
                        (endedAt == null ? clock.instant() : endedAt).toEpochMilli())));
  }

  private interface Body {
    void set(RunSessionInteractiveServerMsg.Builder b);
  }

  private static RunSessionInteractiveServerMsg msg(Body body) {
    RunSessionInteractiveServerMsg.Builder b = RunSessionInteractiveServerMsg.newBuilder();
    body.set(b);
    return b.build();
  }

  /** The runtime's session output: the turn's text, its stop reason, and one record per turn. */
  private String output(String text, String stopReason) {
    ObjectNode out = Json.MAPPER.createObjectNode();
    out.put("message", text).put("stop_reason", stopReason);
    ArrayNode turnRecords = out.putArray("turns");
    for (InteractiveConversationMessage m : history) {
      if (m.getRole().equals("assistant")) {
        turnRecords
            .addObject()
            .put("stop_reason", m.getStopReason())
            .put("turn_duration_ms", m.getTurnDurationMs());
      }
    }
    return out.toString();
  }

  /** What the user said: the input's {@code message}, else its {@code text}, else it whole. */
  private static String userText(String inputJson) {
    JsonNode input = parse(inputJson);
    for (String key : List.of("message", "text")) {
      if (input.get(key) != null && input.get(key).isTextual()) {
        return input.get(key).asText().strip();
      }
    }
    return inputJson.strip();
  }

  private static JsonNode parse(String json) {
    try {
      return Json.MAPPER.readTree(json);
    } catch (IOException e) {
      return Json.MAPPER.createObjectNode();
    }
  }
}
