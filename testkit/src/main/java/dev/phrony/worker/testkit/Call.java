package dev.phrony.worker.testkit;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One tool call as the runtime would dispatch it: the fields of a {@code WorkInvoke}.
 *
 * <p>{@code callId} is the idempotency key. The real runtime derives it deterministically as {@code
 * session:agent_version:turn:index} (see {@link #deriveCallId}), so re-dispatching the same logical
 * call after a restart reuses the id. The routing key is {@link #key()}.
 *
 * <p>{@code args} is JSON; {@code null} or empty becomes {@code {}} as the runtime sends it. The
 * array is copied on construction; treat the one returned by {@link #args()} as read-only.
 *
 * @param callId idempotency key, not blank
 * @param sessionId the session the call belongs to ({@link LocalRuntime#cancelSession} cancels by
 *     it)
 * @param agentVersionId agent version that made the call
 * @param turn model turn number
 * @param tool tool name (the binding's {@code ref}), not blank
 * @param version handler version; the runtime uses {@code default} for an unversioned binding
 * @param args JSON arguments
 * @param sideEffectClass {@code read_only}, {@code idempotent_write}, {@code non_idempotent_write},
 *     {@code irreversible_action} or empty
 * @param deadlineUnixMs the session deadline carried to the worker, 0 for none (informational only:
 *     the runtime bounds the dispatch by its own queue-wait setting)
 */
public record Call(
    String callId,
    String sessionId,
    String agentVersionId,
    int turn,
    String tool,
    String version,
    byte[] args,
    String sideEffectClass,
    long deadlineUnixMs) {

  private static final byte[] EMPTY_OBJECT = "{}".getBytes(StandardCharsets.UTF_8);

  /** Agent version id used by the convenience factories. */
  public static final String LOCAL_AGENT_VERSION = "av-local";

  /**
   * Validates the id and tool, and normalizes null strings to empty and missing args to {@code {}}.
   */
  public Call {
    requireText(callId, "callId");
    requireText(tool, "tool");
    sessionId = Objects.requireNonNullElse(sessionId, "");
    agentVersionId = Objects.requireNonNullElse(agentVersionId, "");
    version = Objects.requireNonNullElse(version, "");
    sideEffectClass = Objects.requireNonNullElse(sideEffectClass, "");
    args = args == null || args.length == 0 ? EMPTY_OBJECT.clone() : args.clone();
  }

  /**
   * A call with a fresh random session ({@code s-xxxxxxxx}), agent version {@value
   * #LOCAL_AGENT_VERSION}, turn 1, index 0, so its id looks like the runtime's: {@code
   * s-1a2b3c4d:av-local:1:0}.
   */
  public static Call of(String tool, String version, String argsJson) {
    String session = "s-" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
    return sequence(session, LOCAL_AGENT_VERSION).next(tool, version, argsJson);
  }

  /** A call with an explicit id and session; the other fields take neutral values. */
  public static Call of(
      String callId, String sessionId, String tool, String version, String argsJson) {
    return new Call(
        callId, sessionId, LOCAL_AGENT_VERSION, 1, tool, version, utf8(argsJson), "", 0);
  }

  /**
   * Starts numbering calls of one session the way the runtime does: {@code
   * session:agentVersion:turn:index}.
   */
  public static Sequence sequence(String sessionId, String agentVersionId) {
    return new Sequence(sessionId, agentVersionId);
  }

  /** The runtime's deterministic call id: {@code session:agentVersion:turn:index}. */
  public static String deriveCallId(String sessionId, String agentVersionId, int turn, int index) {
    return sessionId + ":" + agentVersionId + ":" + turn + ":" + index;
  }

  /**
   * The routing key {@code tool@version} (just {@code tool} when the version is empty, as the
   * runtime builds it).
   */
  public String key() {
    return toolKey(tool, version);
  }

  /** {@link #args()} as text. */
  public String argsText() {
    return new String(args, StandardCharsets.UTF_8);
  }

  /** This call with other JSON arguments. */
  public Call withArgs(String argsJson) {
    return new Call(
        callId,
        sessionId,
        agentVersionId,
        turn,
        tool,
        version,
        utf8(argsJson),
        sideEffectClass,
        deadlineUnixMs);
  }

  /** This call with a side-effect class ({@code read_only}, {@code idempotent_write}, ...). */
  public Call withSideEffectClass(String newSideEffectClass) {
    return new Call(
        callId,
        sessionId,
        agentVersionId,
        turn,
        tool,
        version,
        args,
        newSideEffectClass,
        deadlineUnixMs);
  }

  /** Sets the session deadline sent to the worker ({@code null} for none). */
  public Call withDeadline(Instant deadline) {
    long ms = deadline == null ? 0 : deadline.toEpochMilli();
    return new Call(
        callId, sessionId, agentVersionId, turn, tool, version, args, sideEffectClass, ms);
  }

  /** The {@code invoke} the runtime sends for this call (the one place one is built from it). */
  public dev.phrony.runtime.v1.WorkInvoke toInvoke() {
    return dev.phrony.runtime.v1.WorkInvoke.newBuilder()
        .setCallId(callId)
        .setSessionId(sessionId)
        .setAgentVersionId(agentVersionId)
        .setTurn(turn)
        .setTool(tool)
        .setVersion(version)
        .setArgs(com.google.protobuf.ByteString.copyFrom(args))
        .setSideEffectClass(sideEffectClass)
        .setDeadlineUnixMs(deadlineUnixMs)
        .build();
  }

  @Override
  public String toString() {
    return "Call[" + callId + " " + key() + " " + argsText() + "]";
  }

  static String toolKey(String tool, String version) {
    return version.isEmpty() ? tool : tool + "@" + version;
  }

  private static byte[] utf8(String json) {
    return json == null ? null : json.getBytes(StandardCharsets.UTF_8);
  }

  private static void requireText(String value, String name) {
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException(name + " is required");
    }
  }

  /**
   * Numbers the calls of one session like the runtime: index counts up within a turn, {@link
   * #nextTurn()} starts the next turn at index 0. Thread-safe.
   */
  public static final class Sequence {
    private final String sessionId;
    private final String agentVersionId;
    private int turn = 1;
    private int index;

    private Sequence(String sessionId, String agentVersionId) {
      requireText(sessionId, "sessionId");
      this.sessionId = sessionId;
      this.agentVersionId = Objects.requireNonNullElse(agentVersionId, "");
    }

    /** The next call of the current turn. */
    public synchronized Call next(String tool, String version, String argsJson) {
      String id = deriveCallId(sessionId, agentVersionId, turn, index++);
      return new Call(id, sessionId, agentVersionId, turn, tool, version, utf8(argsJson), "", 0);
    }

    /** Moves to the next turn; its first call gets index 0. */
    public synchronized Sequence nextTurn() {
      turn++;
      index = 0;
      return this;
    }

    /** The session these calls belong to. */
    public String sessionId() {
      return sessionId;
    }
  }
}
