package dev.phrony.worker.testkit;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;

/**
 * How a dispatched call ended, as the model would see it.
 *
 * <ul>
 *   <li>{@link Result}: the worker's {@code result} payload.
 *   <li>{@link ToolError}: a handler-reported failure, from {@code result.error} or from a {@code
 *       nack}; the model reads {@code code: message}.
 *   <li>{@link DispatchError}: the runtime could not get an answer (no handler, capacity, timeout,
 *       cancellation, a lost worker, ...); the message is the runtime's error text.
 * </ul>
 *
 * Every outcome carries a {@link Trace}: which worker served it and how long it took.
 */
public sealed interface Outcome permits Outcome.Result, Outcome.ToolError, Outcome.DispatchError {

  /** Who served the call and how long the dispatch took. */
  Trace trace();

  /** The text handed to the model for this outcome. */
  String text();

  /** Same outcome with another trace (the ledger uses it to mark replays). */
  Outcome withTrace(Trace trace);

  default String callId() {
    return trace().callId();
  }

  /**
   * Where a call went and how long it took.
   *
   * @param callId the call
   * @param workerId the worker it was leased to, or {@code null} if it never reached one
   * @param elapsed from {@link LocalRuntime#dispatch} to the outcome (queue wait included)
   * @param fromLedger true when a repeat dispatch was answered from the completed-call ledger
   *     without invoking any worker
   */
  record Trace(String callId, String workerId, Duration elapsed, boolean fromLedger) {
    public Trace {
      Objects.requireNonNull(callId, "callId");
      Objects.requireNonNull(elapsed, "elapsed");
    }
  }

  /**
   * The worker's result. {@code payload} is what the model reads: an empty payload from the worker
   * reads as {@code {}}. Treat the array as read-only.
   */
  record Result(byte[] payload, Trace trace) implements Outcome {
    public Result {
      Objects.requireNonNull(trace, "trace");
      payload =
          payload == null || payload.length == 0 ? "{}".getBytes(StandardCharsets.UTF_8) : payload;
    }

    @Override
    public String text() {
      return new String(payload, StandardCharsets.UTF_8);
    }

    @Override
    public Result withTrace(Trace newTrace) {
      return new Result(payload, newTrace);
    }

    @Override
    public String toString() {
      return "Result["
          + text()
          + " worker="
          + trace.workerId()
          + " in "
          + trace.elapsed().toMillis()
          + "ms]";
    }
  }

  /**
   * A handler-reported failure. {@code fromNack} tells a {@code nack} (the worker refused to run
   * the call) from a {@code result} carrying an error; the runtime treats both the same.
   */
  record ToolError(String code, String message, boolean fromNack, Trace trace) implements Outcome {
    public ToolError {
      code = Objects.requireNonNullElse(code, "");
      message = Objects.requireNonNullElse(message, "");
      Objects.requireNonNull(trace, "trace");
    }

    /** {@code code: message}, or just whichever of the two is not empty. */
    @Override
    public String text() {
      if (code.isEmpty()) {
        return message;
      }
      return message.isEmpty() ? code : code + ": " + message;
    }

    @Override
    public ToolError withTrace(Trace newTrace) {
      return new ToolError(code, message, fromNack, newTrace);
    }
  }

  /** The runtime got no answer from a worker; {@code message} is the runtime's error text. */
  record DispatchError(Kind kind, String message, Trace trace) implements Outcome {
    public DispatchError {
      Objects.requireNonNull(kind, "kind");
      Objects.requireNonNull(message, "message");
      Objects.requireNonNull(trace, "trace");
    }

    @Override
    public String text() {
      return message;
    }

    @Override
    public DispatchError withTrace(Trace newTrace) {
      return new DispatchError(kind, message, newTrace);
    }
  }

  /** Why a dispatch produced no worker answer; each is a distinct error in the runtime. */
  enum Kind {
    /** The wait ended and no worker advertises the {@code tool@version}. */
    NO_HANDLER,
    /** The wait ended; workers advertise the key but none had a free slot and a live lease. */
    CAPACITY_EXHAUSTED,
    /** The key's wait queue already held its maximum (256) calls: refused at once. */
    QUEUE_FULL,
    /**
     * The call ran longer than the runtime's dispatch bound; the runtime forgot it and sent {@code
     * cancel}.
     */
    TIMEOUT,
    /**
     * The call's session was cancelled (or the caller cancelled the future); {@code cancel} was
     * sent if it was running.
     */
    CANCELLED,
    /**
     * The worker holding the call went away (stream end, re-registration, runtime shutdown):
     * outcome unknown.
     */
    INDETERMINATE,
    /** The chosen worker's stream was already dead (ended by the runtime, entry still routable). */
    SEND_FAILED,
    /** The runtime is shutting down or stopped. */
    SHUTDOWN
  }
}
