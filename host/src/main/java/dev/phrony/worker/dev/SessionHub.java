package dev.phrony.worker.dev;

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
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * What a {@link Session} shows its streams, and where it stands: its subscribers, its status (the
 * runtime's {@code model.SessionStatus*}), the approvals it holds, its history and its end. Every
 * event goes out under one lock, so every subscriber sees the same order, and one that attaches
 * late is first shown where the session is ({@code internal/core/session_event_hub.go}).
 */
final class SessionHub {

  // The runtime's session statuses (model.SessionStatus*).
  static final String RUNNING = "running";
  static final String AWAITING_TOOL = "awaiting_tool";
  static final String AWAITING_APPROVAL = "awaiting_approval";
  static final String AWAITING_INPUT = "awaiting_input";
  static final String COMPLETED = "completed";
  static final String FAILED = "failed";
  static final String CANCELLED = "cancelled";

  private static final Set<String> ENDED = Set.of(COMPLETED, FAILED, CANCELLED);

  private final String id;
  private final String agentVersionId;
  private final String modelProvider;
  private final String modelName;
  private final Instant startedAt;
  private final InstantSource clock;
  private final Consumer<String> console;
  private final Runnable onEnd;

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

  /** CancelSession asked for its end (read by the threads that run its turn). */
  private volatile boolean cancelling;

  /**
   * @param agentVersionId what {@code session_started} says, as its model's provider and name
   * @param console where the {@code session_ended} line goes
   * @param onEnd run once when it ends (its held approvals withdrawn)
   */
  SessionHub(
      String id,
      String agentVersionId,
      String modelProvider,
      String modelName,
      InstantSource clock,
      Consumer<String> console,
      Runnable onEnd) {
    this.id = id;
    this.agentVersionId = agentVersionId;
    this.modelProvider = modelProvider;
    this.modelName = modelName;
    this.clock = clock;
    this.console = console;
    this.onEnd = onEnd;
    this.startedAt = clock.instant();
  }

  /** Subscribes the starting stream and shows it {@code session_started}. */
  void first(StreamObserver<RunSessionInteractiveServerMsg> stream) {
    synchronized (lock) {
      subscribers.add(stream);
      stream.onNext(started(false));
    }
  }

  /**
   * Shows a stream what a late subscriber needs: {@code session_started} with the history, then the
   * held approvals and {@code awaiting_input} (its {@code input_blocked_reason} saying what the
   * session waits for); for an ended session, its end. Subscribes it unless the session has ended.
   *
   * @return false when the session has ended (the stream was shown its end, and is done)
   */
  boolean attach(StreamObserver<RunSessionInteractiveServerMsg> stream) {
    synchronized (lock) {
      boolean ended = ENDED.contains(status);
      stream.onNext(started(true));
      switch (status) {
        case COMPLETED -> stream.onNext(completed());
        case FAILED -> stream.onNext(failed());
        case CANCELLED -> stream.onNext(cancelled());
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

  /** CancelSession was asked: what runs its turn stops at the next step. */
  void markCancelling() {
    cancelling = true;
  }

  boolean cancelling() {
    return cancelling;
  }

  /** The approvals held now, oldest first. */
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

  /** Whether a turn has ended (so closing the starting stream completes the session). */
  boolean hasOutput() {
    synchronized (lock) {
      return !lastOutput.isEmpty();
    }
  }

  void setStatus(String s) {
    synchronized (lock) {
      status = s;
    }
  }

  void publish(RunSessionInteractiveServerMsg m) {
    synchronized (lock) {
      broadcast(m);
    }
  }

  /** Publishes {@code m}, the session then being {@code newStatus} (unless it has ended). */
  void publish(RunSessionInteractiveServerMsg m, String newStatus) {
    synchronized (lock) {
      if (!ENDED.contains(status)) {
        status = newStatus;
      }
      broadcast(m);
    }
  }

  /** A call held for a human: {@code approval_required}, the session awaiting approval. */
  void hold(RunSessionInteractiveApprovalRequired event) {
    synchronized (lock) {
      held.put(event.getApprovalId(), event);
      status = AWAITING_APPROVAL;
      broadcast(msg(b -> b.setApprovalRequired(event)));
    }
  }

  /** The approval is no longer held: decided, withdrawn or cancelled. */
  void release(String approvalId) {
    synchronized (lock) {
      held.remove(approvalId);
      if (status.equals(AWAITING_APPROVAL) && held.isEmpty()) {
        status = RUNNING;
      }
    }
  }

  /** The turn's last completion ended: its history, and {@code awaiting_input}. */
  void finishTurn(String userText, String text, String stopReason, Duration took) {
    synchronized (lock) {
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

  void complete() {
    end(COMPLETED, null);
  }

  void fail(String message) {
    end(FAILED, message);
  }

  void cancel() {
    end(CANCELLED, null);
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
  private void end(String finalStatus, String failure) {
    List<StreamObserver<RunSessionInteractiveServerMsg>> streams;
    synchronized (lock) {
      if (ENDED.contains(status)) {
        return;
      }
      endedAt = clock.instant();
      if (failure != null) {
        error = failure;
      }
      broadcast(
          switch (finalStatus) {
            case COMPLETED -> completed();
            case FAILED -> failed();
            default -> cancelled();
          });
      status = finalStatus;
      held.clear();
      streams = List.copyOf(subscribers);
      subscribers.clear();
    }
    onEnd.run();
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

  // ------------------------------------------------------------------ the messages

  private RunSessionInteractiveServerMsg started(boolean withHistory) {
    var b =
        RunSessionInteractiveSessionStarted.newBuilder()
            .setSessionId(id)
            .setAgentVersionId(agentVersionId)
            .setModelProvider(modelProvider)
            .setModelName(modelName)
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
                    .setSessionEndedAtUnixMs(endedAtMillis())));
  }

  private RunSessionInteractiveServerMsg failed() {
    return msg(b -> b.setFailed(RunSessionInteractiveFailed.newBuilder().setMessage(error)));
  }

  private RunSessionInteractiveServerMsg cancelled() {
    return msg(
        b ->
            b.setCancelled(
                RunSessionInteractiveCancelled.newBuilder()
                    .setSessionEndedAtUnixMs(endedAtMillis())));
  }

  private long endedAtMillis() {
    return (endedAt == null ? clock.instant() : endedAt).toEpochMilli();
  }

  interface Body {
    void set(RunSessionInteractiveServerMsg.Builder b);
  }

  static RunSessionInteractiveServerMsg msg(Body body) {
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
}
