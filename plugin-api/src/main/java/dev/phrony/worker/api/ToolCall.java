package dev.phrony.worker.api;

import java.time.Instant;
import java.util.Optional;

/**
 * One invocation of a tool, as the runtime sent it. Implemented by the host.
 *
 * <p>A call may be cancelled by the runtime (the session was cancelled, or its wait ran out) or
 * pass its deadline; the host then interrupts the handler's thread. Handlers doing long work
 * without blocking calls should check {@link #isCancelled()} now and then.
 */
public interface ToolCall {

  /**
   * Deterministic per logical call ({@code session:agent_version:turn:index}); may be redelivered.
   */
  String callId();

  /** The agent session the call belongs to. */
  String sessionId();

  /** The agent version that made the call. */
  String agentVersionId();

  /** The turn of the session in which the model made the call. */
  int turn();

  /** Tool name of the routing key. */
  String tool();

  /** Version of the routing key ({@code default} for unversioned bindings). */
  String version();

  /** The side-effect class the agent manifest declares for this binding, if it declares one. */
  Optional<SideEffectClass> sideEffectClass();

  /** The session's deadline, if it has one; the host interrupts the handler when it passes. */
  Optional<Instant> deadline();

  /** The raw arguments: JSON bytes as the model produced them ({@code {}} when it gave none). */
  byte[] argsBytes();

  /**
   * Decodes the arguments into {@code type} (a record, typically) with the host's JSON codec.
   *
   * @throws ToolException with code {@code invalid_args} when they do not fit {@code type}
   */
  <T> T args(Class<T> type);

  /** True once the runtime cancelled the call or its deadline passed. */
  boolean isCancelled();
}
