package dev.phrony.worker.testkit;

import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkHeartbeatAck;
import dev.phrony.runtime.v1.WorkRegistered;
import dev.phrony.runtime.v1.WorkResultAck;
import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.runtime.v1.WorkToolCancel;
import java.util.Locale;

/**
 * Server messages, and the runtime's error texts, spelled exactly as the Go runtime spells them.
 */
final class Wire {

  // Stream-ending status descriptions (work_stream.go / registry.go).
  static final String WORKER_ID_REQUIRED = "worker_id is required";
  static final String SHUTTING_DOWN = "tool worker registry is shutting down";
  static final String UNKNOWN_MESSAGE = "unknown work client message";

  // Dispatch error texts (errors.go and Go's context package).
  static final String NO_HANDLER = "no handler registered for tool";
  static final String CAPACITY_EXHAUSTED = "tool handler capacity exhausted";
  static final String QUEUE_FULL = "tool dispatch wait queue full";
  static final String INDETERMINATE = "tool dispatch outcome indeterminate";
  static final String CANCELED = "context canceled";
  static final String DEADLINE_EXCEEDED = "context deadline exceeded";

  private static final WorkServerMsg HEARTBEAT_ACK =
      WorkServerMsg.newBuilder().setHeartbeatAck(WorkHeartbeatAck.getDefaultInstance()).build();

  private Wire() {}

  static String registerFirst(String what) {
    return "register before " + what;
  }

  static String unknownWorker(String workerId) {
    return "unknown worker " + quote(workerId);
  }

  static String unknownCall(String callId) {
    return "unknown call_id " + quote(callId);
  }

  static String wrongWorker(String callId, String owner, String sender) {
    return "call_id "
        + quote(callId)
        + " owned by worker "
        + quote(owner)
        + ", not "
        + quote(sender);
  }

  /** Go's {@code errors.Join(sentinel, cause)}: one line each. */
  static String joined(String sentinel, String cause) {
    return sentinel + "\n" + cause;
  }

  static WorkServerMsg registered(String workerId, long leaseTtlMs) {
    return WorkServerMsg.newBuilder()
        .setRegistered(WorkRegistered.newBuilder().setWorkerId(workerId).setLeaseTtlMs(leaseTtlMs))
        .build();
  }

  static WorkServerMsg heartbeatAck() {
    return HEARTBEAT_ACK;
  }

  static WorkServerMsg resultAck(String callId) {
    return WorkServerMsg.newBuilder()
        .setResultAck(WorkResultAck.newBuilder().setCallId(callId))
        .build();
  }

  static WorkServerMsg cancel(String callId) {
    return WorkServerMsg.newBuilder()
        .setCancel(WorkToolCancel.newBuilder().setCallId(callId))
        .build();
  }

  static WorkServerMsg invoke(Call call) {
    return WorkServerMsg.newBuilder().setInvoke(call.toInvoke()).build();
  }

  /**
   * Go's {@code %q} for the ids we quote: double quotes, with quotes, backslashes and controls
   * escaped.
   */
  static String quote(String s) {
    StringBuilder b = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20 || c == 0x7f) {
            b.append(String.format(Locale.ROOT, "\\x%02x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }

  /** One short line for debug logs; payloads and args are never printed. */
  static String describe(WorkServerMsg m) {
    return switch (m.getBodyCase()) {
      case REGISTERED -> "registered lease_ttl_ms=" + m.getRegistered().getLeaseTtlMs();
      case INVOKE ->
          "invoke call_id="
              + m.getInvoke().getCallId()
              + " tool="
              + m.getInvoke().getTool()
              + "@"
              + m.getInvoke().getVersion()
              + " args_bytes="
              + m.getInvoke().getArgs().size();
      case CANCEL -> "cancel call_id=" + m.getCancel().getCallId();
      case RESULT_ACK -> "result_ack call_id=" + m.getResultAck().getCallId();
      case HEARTBEAT_ACK -> "heartbeat_ack";
      case BODY_NOT_SET -> "empty";
    };
  }

  static String describe(WorkClientMsg m) {
    return switch (m.getBodyCase()) {
      case REGISTER ->
          "register worker_id="
              + m.getRegister().getWorkerId()
              + " handlers="
              + m.getRegister().getHandlersCount()
              + " in_flight="
              + m.getRegister().getInFlightCount();
      case HEARTBEAT -> "heartbeat";
      case RESULT ->
          "result call_id="
              + m.getResult().getCallId()
              + (m.getResult().hasError()
                  ? " error=" + m.getResult().getError().getCode()
                  : " payload_bytes=" + m.getResult().getPayload().size());
      case NACK -> "nack call_id=" + m.getNack().getCallId() + " code=" + m.getNack().getCode();
      case BODY_NOT_SET -> "empty";
    };
  }
}
