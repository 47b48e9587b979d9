package dev.phrony.worker.testkit;

import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkServerMsg;
import io.grpc.Status;
import java.time.Instant;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Predicate;

/**
 * One thing that happened on a Work stream: a message in, a message out, or the stream's end.
 *
 * <p>{@code IN} events are recorded when the runtime reads a message, before it acts on it; {@code
 * OUT} events when a message is handed to the transport (a message the runtime queued for a stream
 * that died first never appears); {@code END} once per stream with its final status (the status the
 * runtime sent, or the transport's when the client went away).
 *
 * @param seq position in the runtime's event log (strictly increasing, never reused)
 * @param at when, by the runtime's clock
 * @param streamId the stream (numbered from 1 in opening order, across restarts)
 * @param workerId the worker id registered on that stream so far, or {@code null} before {@code
 *     register}
 * @param direction IN, OUT or END
 * @param message a {@link WorkClientMsg} (IN), a {@link WorkServerMsg} (OUT) or an {@link
 *     io.grpc.Status} (END)
 */
public record Event(
    long seq, Instant at, long streamId, String workerId, Direction direction, Object message) {

  /** Which way an event went. */
  public enum Direction {
    /** A client message the runtime read. */
    IN,
    /** A server message the runtime wrote. */
    OUT,
    /** The stream ended. */
    END
  }

  /** Validates the components. */
  public Event {
    Objects.requireNonNull(at, "at");
    Objects.requireNonNull(direction, "direction");
    Objects.requireNonNull(message, "message");
  }

  /** The client message of an IN event, else {@code null}. */
  public WorkClientMsg clientMsg() {
    return message instanceof WorkClientMsg m ? m : null;
  }

  /** The server message of an OUT event, else {@code null}. */
  public WorkServerMsg serverMsg() {
    return message instanceof WorkServerMsg m ? m : null;
  }

  /** The final status of an END event, else {@code null}. */
  public Status status() {
    return message instanceof Status s ? s : null;
  }

  /**
   * The message type in wire spelling ({@code register}, {@code invoke}, {@code result_ack}, ...)
   * or {@code end}.
   */
  public String type() {
    return switch (message) {
      case WorkClientMsg m -> m.getBodyCase().name().toLowerCase(Locale.ROOT);
      case WorkServerMsg m -> m.getBodyCase().name().toLowerCase(Locale.ROOT);
      default -> "end";
    };
  }

  /** The {@code call_id} the message is about, or {@code ""} when it has none. */
  public String callId() {
    if (message instanceof WorkClientMsg m) {
      return switch (m.getBodyCase()) {
        case RESULT -> m.getResult().getCallId();
        case NACK -> m.getNack().getCallId();
        default -> "";
      };
    }
    if (message instanceof WorkServerMsg m) {
      return switch (m.getBodyCase()) {
        case INVOKE -> m.getInvoke().getCallId();
        case CANCEL -> m.getCancel().getCallId();
        case RESULT_ACK -> m.getResultAck().getCallId();
        default -> "";
      };
    }
    return "";
  }

  /** Matches client messages of one kind, e.g. {@code Event.in(WorkClientMsg.BodyCase.RESULT)}. */
  public static Predicate<Event> in(WorkClientMsg.BodyCase body) {
    return e -> e.message instanceof WorkClientMsg m && m.getBodyCase() == body;
  }

  /** Matches server messages of one kind, e.g. {@code Event.out(WorkServerMsg.BodyCase.INVOKE)}. */
  public static Predicate<Event> out(WorkServerMsg.BodyCase body) {
    return e -> e.message instanceof WorkServerMsg m && m.getBodyCase() == body;
  }

  /** Matches stream ends. */
  public static Predicate<Event> end() {
    return e -> e.direction == Direction.END;
  }

  /** Matches events about one call id. */
  public static Predicate<Event> about(String callId) {
    return e -> e.callId().equals(callId);
  }

  @Override
  public String toString() {
    String what =
        switch (message) {
          case Status s ->
              "end "
                  + s.getCode()
                  + (s.getDescription() == null ? "" : " \"" + s.getDescription() + "\"");
          default -> {
            String id = callId();
            yield id.isEmpty() ? type() : type() + " " + id;
          }
        };
    return "#" + seq + " stream=" + streamId + " worker=" + workerId + " " + direction + " " + what;
  }
}
