package dev.phrony.worker.call;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolCall;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The {@link ToolCall} a handler receives: the call's facts as the runtime sent them, copied into a
 * small object of its own. It holds no reference back into the host (no dispatcher, no stream, no
 * other call), so reflection on it reaches nothing a plugin should not see; only the cancel flag
 * changes after construction.
 */
public final class CallContext implements ToolCall {
  private final String callId;
  private final String sessionId;
  private final String agentVersionId;
  private final int turn;
  private final String tool;
  private final String version;
  private final String sideEffectClass;
  private final long deadlineUnixMs;

  /** Read-only view of the arguments as they arrived; never handed out, only copied or read. */
  private final ByteBuffer args;

  private final JsonCodec codec;
  private volatile boolean cancelled;

  /** {@link #NEW} until the handler begins ({@link #STARTED}) or is stopped before it does. */
  private final AtomicInteger phase = new AtomicInteger(NEW);

  private static final int NEW = 0;
  private static final int STARTED = 1;
  private static final int STOPPED = 2;

  /** The stage an asynchronous handler returned: cancelled with the call. */
  private volatile CompletableFuture<?> stage;

  /**
   * @param sideEffectClass wire name from the invoke (may be empty)
   * @param deadlineUnixMs the session's deadline, 0 for none
   * @param args the arguments (a read-only view is kept; the buffer must not change)
   */
  public CallContext(
      String callId,
      String sessionId,
      String agentVersionId,
      int turn,
      String tool,
      String version,
      String sideEffectClass,
      long deadlineUnixMs,
      ByteBuffer args,
      JsonCodec codec) {
    this.callId = Objects.requireNonNull(callId, "callId");
    this.sessionId = sessionId;
    this.agentVersionId = agentVersionId;
    this.turn = turn;
    this.tool = tool;
    this.version = version;
    this.sideEffectClass = sideEffectClass;
    this.deadlineUnixMs = deadlineUnixMs;
    this.args = args.asReadOnlyBuffer();
    this.codec = codec;
  }

  /** The arguments as they arrived, for the host's own checks (a view, not a copy). */
  public ByteBuffer rawArgs() {
    return args.duplicate();
  }

  /**
   * Marks the call cancelled (cancel or deadline) and cancels the stage of an asynchronous handler;
   * the owner also interrupts the handler's thread, if it has one.
   */
  public void markCancelled() {
    cancelled = true;
    phase.compareAndSet(NEW, STOPPED);
    CompletableFuture<?> s = stage;
    if (s != null) {
      cancel(s);
    }
  }

  /**
   * Claims the start, just before the handler's own code runs: false when the call was cancelled
   * first, and the handler then must not run. With {@link #neverStarted} it decides, race-free,
   * whether a cancelled call's handler ran at all.
   */
  public boolean begin() {
    return phase.compareAndSet(NEW, STARTED);
  }

  /**
   * Cancels the call if its handler has not begun, and says whether it never did (and now never
   * will): such a call did nothing, so it is safe to run again. False once {@link #begin} won.
   */
  public boolean neverStarted() {
    phase.compareAndSet(NEW, STOPPED);
    return phase.get() == STOPPED;
  }

  /** The stage is the handler's: a subclass may refuse to be cancelled, which changes nothing. */
  private static void cancel(CompletableFuture<?> s) {
    try {
      s.cancel(true);
    } catch (RuntimeException e) {
      // e.g. minimalCompletionStage(): the call's outcome is dropped all the same
    }
  }

  /**
   * {@code s}, the stage the handler returned, is cancelled with the call (at once if the call is
   * cancelled already). Both fields are volatile and each side writes its own before reading the
   * other's, so a cancel racing this is never missed.
   */
  void cancelWithCall(CompletableFuture<?> s) {
    stage = s;
    if (cancelled) {
      cancel(s);
    }
  }

  @Override
  public String callId() {
    return callId;
  }

  @Override
  public String sessionId() {
    return sessionId;
  }

  @Override
  public String agentVersionId() {
    return agentVersionId;
  }

  @Override
  public int turn() {
    return turn;
  }

  @Override
  public String tool() {
    return tool;
  }

  @Override
  public String version() {
    return version;
  }

  @Override
  public Optional<SideEffectClass> sideEffectClass() {
    if (sideEffectClass == null || sideEffectClass.isEmpty()) {
      return Optional.empty();
    }
    try {
      return Optional.of(SideEffectClass.fromWire(sideEffectClass));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  @Override
  public Optional<Instant> deadline() {
    return deadlineUnixMs <= 0
        ? Optional.empty()
        : Optional.of(Instant.ofEpochMilli(deadlineUnixMs));
  }

  @Override
  public byte[] argsBytes() {
    return JsonCodec.copy(args);
  }

  @Override
  public <T> T args(Class<T> type) {
    return codec.decodeArgs(args, type);
  }

  @Override
  public boolean isCancelled() {
    return cancelled;
  }

  @Override
  public String toString() {
    return "call " + callId + " (" + tool + "@" + version + ")";
  }
}
