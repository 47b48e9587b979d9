package dev.phrony.worker.work;

import dev.phrony.worker.call.JsonCodec;
import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.WorkInvoke;
import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolCall;
import dev.phrony.worker.plugin.HandlerCatalog;
import java.time.Instant;
import java.util.Optional;

/**
 * One running call: the {@link ToolCall} its handler sees, and the small state machine that
 * decides which of handler completion, cancel and deadline wins.
 *
 * <pre>
 * RUNNING --complete/deadline--> COMPLETING --held--> DONE
 * RUNNING --cancel--> CANCELLED
 * </pre>
 *
 * State, owner and slot are guarded by {@code this}; transitions are rare and short.
 */
final class Invocation implements ToolCall {
  enum State { RUNNING, COMPLETING, DONE, CANCELLED }

  private final WorkInvoke invoke;
  private final ToolSlots slots;
  private final HandlerCatalog.Entry entry;
  private final JsonCodec codec;
  private final Instant startedAt;
  private volatile Thread thread;
  private volatile boolean interrupted;

  private State state = State.RUNNING;
  private CallSink owner;
  private boolean slotHeld;

  Invocation(WorkInvoke invoke, ToolSlots slots, JsonCodec codec, CallSink owner,
      Instant startedAt) {
    this.invoke = invoke;
    this.slots = slots;
    this.entry = slots.entry;
    this.codec = codec;
    this.owner = owner;
    this.slotHeld = true;
    this.startedAt = startedAt;
  }

  HandlerCatalog.Entry entry() {
    return entry;
  }

  /** The slots and meters of this call's {@code tool@version}. */
  ToolSlots slots() {
    return slots;
  }

  String key() {
    return slots.key();
  }

  Instant startedAt() {
    return startedAt;
  }

  void runningOn(Thread t) {
    thread = t;
  }

  /** Interrupts the handler thread (cancel, deadline, drain). */
  void interrupt() {
    interrupted = true;
    Thread t = thread;
    if (t != null) {
      t.interrupt();
    }
  }

  /** RUNNING -> COMPLETING: true for the one caller whose outcome stands. */
  synchronized boolean tryComplete() {
    if (state != State.RUNNING) {
      return false;
    }
    state = State.COMPLETING;
    return true;
  }

  /** COMPLETING -> DONE once the result is held; returns the stream to send it on, if any. */
  synchronized CallSink done() {
    state = State.DONE;
    return owner;
  }

  /** RUNNING -> CANCELLED; false when an outcome already stands. */
  synchronized boolean cancel() {
    if (state != State.RUNNING) {
      return false;
    }
    state = State.CANCELLED;
    return true;
  }

  /**
   * A repeated invoke of this call on {@code sink}: the result will go there (rule 3/5). False
   * when the call is done or cancelled (the caller then looks for a held result).
   *
   * @return true if attached; {@code takeSlot} tells whether a slot must be counted
   */
  synchronized boolean attach(CallSink sink) {
    if (state == State.DONE || state == State.CANCELLED) {
      return false;
    }
    owner = sink;
    return true;
  }

  /** Marks the slot held (after attach); false if it already was. */
  synchronized boolean holdSlot() {
    if (slotHeld) {
      return false;
    }
    slotHeld = true;
    return true;
  }

  /** Gives the slot back; true if it was held (the caller decrements the count). */
  synchronized boolean releaseSlot() {
    if (!slotHeld) {
      return false;
    }
    slotHeld = false;
    return true;
  }

  /** The stream ended: the call now runs apart from any stream. True if {@code sink} owned it. */
  synchronized boolean detachFrom(CallSink sink) {
    if (owner != sink) {
      return false;
    }
    owner = null;
    return true;
  }

  synchronized CallSink owner() {
    return owner;
  }

  synchronized State state() {
    return state;
  }

  // ToolCall

  @Override
  public String callId() {
    return invoke.getCallId();
  }

  @Override
  public String sessionId() {
    return invoke.getSessionId();
  }

  @Override
  public String agentVersionId() {
    return invoke.getAgentVersionId();
  }

  @Override
  public int turn() {
    return invoke.getTurn();
  }

  @Override
  public String tool() {
    return invoke.getTool();
  }

  @Override
  public String version() {
    return invoke.getVersion();
  }

  @Override
  public Optional<SideEffectClass> sideEffectClass() {
    String s = invoke.getSideEffectClass();
    if (s.isEmpty()) {
      return Optional.empty();
    }
    try {
      return Optional.of(SideEffectClass.fromWire(s));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  @Override
  public Optional<Instant> deadline() {
    long ms = invoke.getDeadlineUnixMs();
    return ms <= 0 ? Optional.empty() : Optional.of(Instant.ofEpochMilli(ms));
  }

  /** The arguments as they arrived, for the host's own checks (not copied). */
  ByteString rawArgs() {
    return invoke.getArgs();
  }

  @Override
  public byte[] argsBytes() {
    return invoke.getArgs().toByteArray();
  }

  @Override
  public <T> T args(Class<T> type) {
    return codec.decodeArgs(invoke.getArgs().asReadOnlyByteBuffer(), type);
  }

  @Override
  public boolean isCancelled() {
    return interrupted;
  }

  @Override
  public String toString() {
    return "call " + callId() + " (" + key() + ")";
  }
}
