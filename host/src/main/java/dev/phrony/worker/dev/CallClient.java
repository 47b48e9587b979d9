package dev.phrony.worker.dev;

import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.RunSessionInteractiveApprovalRequired;
import dev.phrony.runtime.v1.RunSessionInteractiveServerMsg;
import dev.phrony.runtime.v1.RunSessionInteractiveStart;
import dev.phrony.runtime.v1.RunSessionInteractiveToolResult;
import java.time.Duration;
import java.util.function.Consumer;

/**
 * {@code call TOOL ARGS}: one tool call through {@code dev}'s runtime address, as a client of the
 * runtime's {@code RunSessionInteractive}: a session of dev's call agent ({@link CallModel#REF})
 * whose input is the call; its {@code approval_required} goes to the caller (to ask a human, or to
 * say which approval to answer), its {@code tool_result} or {@code failed} is the answer. The
 * client then closes its side, and the session completes (or, named with {@code --session}, waits
 * for the next call).
 */
public final class CallClient {

  /** How long the session is given to end once the answer is in. */
  private static final Duration END_WAIT = Duration.ofSeconds(5);

  private final String target;

  private CallClient(String target) {
    this.target = target;
  }

  /** A client of the runtime address {@code target} ({@code host:port}). */
  public static CallClient of(String target) {
    return new CallClient(target.strip());
  }

  public String target() {
    return target;
  }

  /**
   * Makes the call and waits for its answer (bounded by the call's own deadline, or the runtime's
   * dispatch wait, and any approval).
   *
   * @param held told each {@code approval_required} of the call, on this thread (it may block to
   *     ask a human: the call waits for the answer anyway)
   * @throws dev.phrony.worker.UserErrorException when the runtime refuses the call
   * @throws ControlUnreachableException when nothing answers at the address
   */
  public CallReply call(CallRequest request, Consumer<RunSessionInteractiveApprovalRequired> held) {
    RunSessionInteractiveStart.Builder start =
        RunSessionInteractiveStart.newBuilder()
            .setAgentRef(CallModel.REF)
            .setInput(ByteString.copyFrom(request.toJson()));
    if (request.sessionId() != null) {
      start.setSessionId(request.sessionId());
    }
    try (InteractiveStream stream = new InteractiveStream(target, start.build())) {
      while (true) {
        switch (stream.next()) {
          case InteractiveStream.Event e -> {
            CallReply reply = answer(e.msg());
            if (reply != null) {
              stream.closeSend(END_WAIT);
              return reply;
            }
            if (e.msg().hasApprovalRequired()) {
              held.accept(e.msg().getApprovalRequired());
            }
          }
          case InteractiveStream.End end -> {
            if (end.status().isOk()) {
              return dispatchError("", "the session ended without an answer");
            }
            throw stream.failure(end.status());
          }
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return dispatchError("", "interrupted");
    }
  }

  /** The call's answer in {@code m}, or null when {@code m} is not one. */
  private static CallReply answer(RunSessionInteractiveServerMsg m) {
    switch (m.getBodyCase()) {
      case TOOL_RESULT -> {
        RunSessionInteractiveToolResult r = m.getToolResult();
        return r.getErrorMessage().isEmpty()
            ? CallReply.of(
                CallReply.Kind.RESULT, r.getCallId(), r.getPayload().toByteArray(), null, null)
            : CallReply.of(
                CallReply.Kind.TOOL_ERROR, r.getCallId(), null, r.getErrorMessage(), null);
      }
      case FAILED -> {
        // CallModel's failure: "kind: message", and "hint: ..." on a line of its own.
        String message = m.getFailed().getMessage();
        int hint = message.indexOf("\nhint: ");
        return hint < 0
            ? dispatchError("", message)
            : CallReply.of(
                CallReply.Kind.DISPATCH_ERROR,
                "",
                null,
                message.substring(0, hint),
                message.substring(hint + "\nhint: ".length()));
      }
      case CANCELLED -> {
        return dispatchError("", "cancelled: the session was cancelled (CancelSession)");
      }
      case COMPLETED -> {
        return dispatchError("", "the session completed without an answer");
      }
      default -> {
        return null;
      }
    }
  }

  private static CallReply dispatchError(String callId, String line) {
    return CallReply.of(CallReply.Kind.DISPATCH_ERROR, callId, null, line, null);
  }
}
