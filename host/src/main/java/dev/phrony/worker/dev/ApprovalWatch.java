package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.JsonNode;
import dev.phrony.worker.SyntaxException;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * What {@code call} does while it waits for its outcome: it follows its session's events, and when
 * its call is held for approval hands that {@code approval_required} event to a handler (once),
 * which says so or asks the person at the terminal. The follow is in place before this returns, so
 * a call submitted afterwards cannot be held unseen.
 */
public final class ApprovalWatch implements AutoCloseable {
  /** How long closing waits for the watch to see the call's end. */
  static final long SETTLE_MS = 2000;

  private final ControlClient.EventStream stream;
  private final Thread thread;

  private ApprovalWatch(ControlClient.EventStream stream, Thread thread) {
    this.stream = stream;
    this.thread = thread;
  }

  /**
   * Starts watching for {@code request} (which names its session): its call is the first {@code
   * tool_call} of its tool and version from now on.
   *
   * @param newSession true when the session is new (no event of it to skip)
   * @param onHeld gets the {@code approval_required} event; runs on the watch's own thread and may
   *     block (a prompt)
   * @throws ControlUnreachableException when no dev answers
   */
  public static ApprovalWatch start(
      ControlClient client, CallRequest request, boolean newSession, Consumer<JsonNode> onHeld) {
    Objects.requireNonNull(request.sessionId(), "the request's session");
    long after = 0;
    if (!newSession) {
      try (ControlClient.EventStream kept = client.events(request.sessionId(), 0, false)) {
        for (String line = kept.next(); line != null; line = kept.next()) {
          after = Json.parse(line).path("seq").asLong(after);
        }
      } catch (ControlRequestException e) {
        // no event of it yet
      }
    }
    ControlClient.EventStream stream = client.events(request.sessionId(), after, true);
    Thread thread =
        Thread.ofPlatform()
            .daemon()
            .name("phrony-call-approval-watch")
            .unstarted(() -> watch(stream, request, onHeld));
    thread.start();
    return new ApprovalWatch(stream, thread);
  }

  private static void watch(
      ControlClient.EventStream stream, CallRequest request, Consumer<JsonNode> onHeld) {
    String callId = null;
    for (String line = stream.next(); line != null; line = stream.next()) {
      JsonNode e;
      try {
        e = Json.parse(line);
      } catch (SyntaxException notJson) {
        continue;
      }
      String type = e.path("type").asText();
      String id = e.path("call_id").asText();
      if (callId == null
          && type.equals(SessionEvents.TOOL_CALL)
          && e.path("tool").asText().equals(request.tool())
          && e.path("version").asText().equals(request.version())) {
        callId = id;
      } else if (id.equals(callId) && type.equals(SessionEvents.APPROVAL_REQUIRED)) {
        onHeld.accept(e);
      } else if (id.equals(callId) && type.equals(SessionEvents.TOOL_RESULT)) {
        return;
      }
    }
  }

  /**
   * Stops watching once the call's {@code tool_result} is seen (dev sends it before the call's
   * answer, so after the answer it is at most on its way), so that a hold is always reported; a
   * prompt still open after {@value #SETTLE_MS} ms is left to the end of the process.
   */
  @Override
  public void close() {
    try {
      thread.join(SETTLE_MS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    stream.close();
    thread.interrupt();
  }
}
