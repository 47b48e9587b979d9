package dev.phrony.worker.dev;

import static dev.phrony.worker.dev.SessionHub.msg;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.runtime.v1.RunSessionInteractiveServerMsg;
import dev.phrony.runtime.v1.RunSessionInteractiveTextDelta;
import dev.phrony.worker.agent.DevAgent;
import dev.phrony.worker.agent.StubScript;
import dev.phrony.worker.dev.SessionCalls.Cancelled;
import dev.phrony.worker.dev.SessionCalls.TurnFailed;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One interactive session of a {@link DevAgent}, run as the runtime runs one ({@code
 * internal/core/run_session_interactive*.go}, {@code internal/executor}): each user turn asks the
 * scripted model for completions until one ends without {@code tool_use}; a completion's tool calls
 * run concurrently ({@link SessionCalls}: the agent's policies, perhaps a human, then a worker).
 *
 * <p>Events, in the runtime's order ({@link SessionHub} sends them): {@code session_started}; per
 * turn {@code text_delta}s, and per call {@code approval_required} (when held), {@code tool_call}
 * (right before its dispatch) and {@code tool_result}; {@code awaiting_input} after the turn. It
 * ends {@code completed} when the stream that started it closes its side after a turn, {@code
 * failed} when a turn fails (the script's {@code failed}, a dispatch the runtime fails on, a denial
 * with {@code on_reject: fail}), or {@code cancelled} by {@code CancelSession}. Streams that attach
 * see the same events from then on; closing one only unsubscribes it.
 *
 * <p>Threads: one virtual thread drives the session (its turns), one per tool call.
 */
final class Session {
  private static final Logger log = LoggerFactory.getLogger(Session.class);

  /** What the driver waits for between turns. */
  private sealed interface Input {}

  private record UserMessage(String inputJson) implements Input {}

  /** The starting stream closed its side: complete once idle. */
  private record Closed() implements Input {}

  private record Wake() implements Input {}

  final String id;
  final DevAgent agent;
  private final CallService calls;
  private final ApprovalBook approvals;
  private final InstantSource clock;
  private final Consumer<String> console;
  private final SessionHub hub;
  private final SessionCalls toolCalls;
  private final LinkedBlockingQueue<Input> inputs = new LinkedBlockingQueue<>();

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
    this.hub = new SessionHub(id, agent, clock, console, () -> approvals.withdraw(id));
    this.toolCalls =
        new SessionCalls(id, agent, calls, approvals, hub, () -> cancelled, console);
  }

  /** Subscribes the starting stream, shows it {@code session_started}, and runs the first turn. */
  void start(StreamObserver<RunSessionInteractiveServerMsg> first, String inputJson) {
    hub.first(first);
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
   * Subscribes a stream to a running session, after showing it where the session is (see {@link
   * SessionHub#attach}).
   *
   * @return false when the session has ended (the stream was shown its end, and is done)
   */
  boolean attach(StreamObserver<RunSessionInteractiveServerMsg> stream) {
    return hub.attach(stream);
  }

  void unsubscribe(StreamObserver<RunSessionInteractiveServerMsg> stream) {
    hub.unsubscribe(stream);
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
    return hub.heldApprovals();
  }

  String status() {
    return hub.status();
  }

  boolean isEnded() {
    return hub.isEnded();
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
            if (hub.hasOutput()) {
              hub.complete();
              return;
            }
          }
          case Wake w -> {}
        }
      }
    } catch (Cancelled | InterruptedException e) {
      hub.cancel();
    } catch (TurnFailed e) {
      hub.fail(e.getMessage());
    } catch (RuntimeException e) {
      log.error("session {} failed", id, e);
      hub.fail("dev: " + e);
    }
  }

  /** One user turn: completions until one ends without {@code tool_use}. */
  private void turn(String inputJson) throws TurnFailed, Cancelled, InterruptedException {
    Instant began = clock.instant();
    hub.setStatus(SessionHub.RUNNING);
    int turn = hub.nextTurn();
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
      List<StubScript.ToolCall> calls = new ArrayList<>();
      for (StubScript.Event e : script.get(completions++)) {
        if (cancelled) {
          throw new Cancelled();
        }
        switch (e) {
          case StubScript.TextDelta t -> {
            if (!t.text().isEmpty()) {
              text.append(t.text());
              hub.publish(
                  msg(
                      b ->
                          b.setTextDelta(
                              RunSessionInteractiveTextDelta.newBuilder().setDelta(t.text()))));
            }
          }
          case StubScript.ToolCall c -> calls.add(c);
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
        hub.finishTurn(
            userText(inputJson), text.toString(), stop, Duration.between(began, clock.instant()));
        return;
      }
      if (calls.isEmpty()) {
        throw new TurnFailed("model stopped for tool_use without tool calls");
      }
      // As the runtime's executor does, each completion numbers its calls from 0 within the turn:
      // a later completion's call repeats an earlier call id, and the ledger answers it with that
      // call's result, as the runtime's does.
      toolCalls.dispatchAll(calls, turn);
    }
  }

  /** What the user said: the input's {@code message}, else its {@code text}, else it whole. */
  private static String userText(String inputJson) {
    JsonNode input = SessionCalls.parse(inputJson);
    for (String key : List.of("message", "text")) {
      if (input.get(key) != null && input.get(key).isTextual()) {
        return input.get(key).asText().strip();
      }
    }
    return inputJson.strip();
  }
}
