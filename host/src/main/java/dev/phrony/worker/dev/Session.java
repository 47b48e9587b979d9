package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.runtime.v1.RunSessionInteractiveServerMsg;
import dev.phrony.worker.agent.DevAgent;
import dev.phrony.worker.dev.SessionCalls.Cancelled;
import dev.phrony.worker.dev.SessionCalls.TurnFailed;
import io.grpc.stub.StreamObserver;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One interactive session, run as the runtime runs one ({@code
 * internal/core/run_session_interactive*.go}): each user turn is answered by its {@link Model} (an
 * agent's scripted model, {@link ScriptModel}, or dev's one tool call, {@link CallModel}), whose
 * events {@link SessionHub} sends to every stream of the session.
 *
 * <p>Events, in the runtime's order: {@code session_started}; per turn {@code text_delta}s, and per
 * call {@code approval_required} (when held), {@code tool_call} (right before its dispatch) and
 * {@code tool_result}; {@code awaiting_input} after the turn. It ends {@code completed} when the
 * stream that started it closes its side after a turn, {@code failed} when a turn fails (the
 * script's {@code failed}, a dispatch the runtime fails on, a denial with {@code on_reject: fail}),
 * or {@code cancelled} by {@code CancelSession}. Streams that attach see the same events from then
 * on; closing one only unsubscribes it.
 *
 * <p>Threads: one virtual thread drives the session (its turns), one per tool call.
 */
final class Session {
  private static final Logger log = LoggerFactory.getLogger(Session.class);

  /** What answers a session's user turns. */
  interface Model {
    /**
     * Runs user turn {@code turn} (1, 2...) to its {@code awaiting_input}, its events sent to the
     * session's hub.
     *
     * @throws TurnFailed the session fails with its message
     * @throws Cancelled the session was cancelled meanwhile
     */
    void turn(String inputJson, int turn) throws TurnFailed, Cancelled, InterruptedException;
  }

  /** What the driver waits for between turns. */
  private sealed interface Input {}

  private record UserMessage(String inputJson) implements Input {}

  /** The starting stream closed its side: complete once idle. */
  private record Closed() implements Input {}

  private record Wake() implements Input {}

  final String id;
  private final SessionHub hub;
  private final Model model;
  private final CallService calls;
  private final ApprovalBook approvals;
  private final Consumer<String> console;
  private final String startedLine;
  private final boolean completesOnClose;
  private final LinkedBlockingQueue<Input> inputs = new LinkedBlockingQueue<>();

  private volatile Thread driver;

  /** The user turns begun (the driver's; the last one's number). */
  private volatile int turnsStarted;

  /**
   * @param startedLine its {@code session_started} line on the console, or null for none
   * @param completesOnClose whether it completes when the stream that started it closes its side
   *     (as the runtime's do), or takes turns until it is cancelled
   */
  private Session(
      String id,
      SessionHub hub,
      Model model,
      CallService calls,
      ApprovalBook approvals,
      Consumer<String> console,
      String startedLine,
      boolean completesOnClose) {
    this.id = id;
    this.hub = hub;
    this.model = model;
    this.calls = calls;
    this.approvals = approvals;
    this.console = console;
    this.startedLine = startedLine;
    this.completesOnClose = completesOnClose;
  }

  /**
   * A session of {@code agent}, its turns answered by the agent's script.
   *
   * @param console where its lines go ({@code session_started}, approvals, denials, its end)
   */
  static Session ofAgent(
      String id,
      DevAgent agent,
      CallService calls,
      ApprovalBook approvals,
      InstantSource clock,
      Consumer<String> console) {
    SessionHub hub =
        new SessionHub(
            id,
            agent.agentVersionId(),
            DevAgent.STUB,
            agent.modelName(),
            clock,
            console,
            () -> approvals.withdraw(id));
    SessionCalls toolCalls =
        new SessionCalls(id, agent, calls, approvals, hub, hub::cancelling, console);
    return new Session(
        id,
        hub,
        new ScriptModel(agent, hub, toolCalls, clock),
        calls,
        approvals,
        console,
        "session_started session_id="
            + id
            + " agent="
            + agent.ref()
            + " agent_version_id="
            + agent.agentVersionId(),
        true);
  }

  /**
   * A session of dev's own calls ({@code call TOOL ARGS}): each turn one tool call, as {@link
   * CallModel} runs it. Its only console lines are its calls' (the {@link CallService}'s).
   *
   * @param named whether the client named it (it then takes calls until it is cancelled)
   * @param turnsBefore the turns of the session it replaces under the same id (0 for none): its
   *     turns number on from there, so that its call ids are new ones, not answered from the ledger
   */
  static Session ofCalls(
      String id,
      boolean named,
      int turnsBefore,
      CallService calls,
      ApprovalBook approvals,
      InstantSource clock) {
    SessionHub hub =
        new SessionHub(
            id,
            CallModel.AGENT_VERSION_ID,
            CallModel.PROVIDER,
            CallModel.NAME,
            clock,
            line -> {},
            () -> calls.approvals().withdrawSession(id));
    Session s =
        new Session(
            id,
            hub,
            new CallModel(id, calls, hub, clock),
            calls,
            approvals,
            line -> {},
            null,
            !named);
    s.turnsStarted = turnsBefore;
    return s;
  }

  /** Subscribes the starting stream, shows it {@code session_started}, and runs the first turn. */
  void start(StreamObserver<RunSessionInteractiveServerMsg> first, String inputJson) {
    hub.first(first);
    if (startedLine != null) {
      console.accept(startedLine);
    }
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

  /** Another turn with {@code inputJson} as its input, as is; refused once it has ended. */
  boolean input(String inputJson) {
    if (isEnded()) {
      return false;
    }
    inputs.add(new UserMessage(inputJson));
    return true;
  }

  /** Whether it completes when the stream that started it closes its side. */
  boolean completesOnClose() {
    return completesOnClose;
  }

  /** The number of its last user turn (0 before the first). */
  int turnsStarted() {
    return turnsStarted;
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

  /** Whether its turns are dev's own calls ({@link #ofCalls}). */
  boolean ofCalls() {
    return model instanceof CallModel;
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
    hub.markCancelling();
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
        if (hub.cancelling()) {
          throw new Cancelled();
        }
        switch (next) {
          case UserMessage u -> {
            hub.setStatus(SessionHub.RUNNING);
            model.turn(u.inputJson(), ++turnsStarted);
          }
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

  /** What the user said: the input's {@code message}, else its {@code text}, else it whole. */
  static String userText(String inputJson) {
    JsonNode input = SessionCalls.parse(inputJson);
    for (String key : List.of("message", "text")) {
      if (input.get(key) != null && input.get(key).isTextual()) {
        return input.get(key).asText().strip();
      }
    }
    return inputJson.strip();
  }
}
