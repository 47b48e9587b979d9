package dev.phrony.worker.work;

import dev.phrony.worker.call.CallContext;
import dev.phrony.worker.outbox.HeldResult;
import dev.phrony.worker.time.Scheduler;

/**
 * One call's state, owned by the {@link Dispatcher}: every field is read and written only in
 * its serialized context, so there is no lock and no second opinion about where a call stands.
 * The handler sees {@link #context}, which has no way back to this object.
 *
 * <pre>
 *            +--intent durable--+
 *  INTENT ---+                  +--> RUNNING --completed / deadline--> HOLDING --held--> (gone)
 *  (admit) --+-----no intent----+
 *   any of INTENT, RUNNING, HOLDING --cancel--> CANCELLED --thread, intent, hold done--> (gone)
 * </pre>
 *
 * A call leaves the dispatcher once its outcome is held (the outbox answers for it from then
 * on), or, when cancelled, once nothing of it is left running or being written.
 */
final class Call {
  enum State {
    /** Its intent is being made durable; the handler may not start before it is. */
    INTENT,
    /** Its arguments are checked and its handler runs (on a thread of its own, or started inline). */
    RUNNING,
    /** Its outcome is decided and being held (made durable first where the outbox does). */
    HOLDING,
    /** The runtime cancelled it (or a drain ran out): nothing is ever sent for it. */
    CANCELLED
  }

  final String callId;
  final String sessionId;
  final ToolSlots slots;
  final CallContext context;
  /** When the invoke was admitted (the clock of the dispatcher's scheduler). */
  final java.time.Instant admittedAt;
  final boolean needsIntent;

  State state;
  /** The stream its answer goes to (rule 3); null once that stream ended. */
  CallSink owner;
  ToolSlots.Permit permit;
  Scheduler.Handle deadline = Scheduler.NONE;
  /** The handler's own thread, to interrupt; null for a handler started inline. */
  Thread thread;
  /** From the handler's start to its "finished" event (its thread ended or its stage done). */
  boolean handlerAlive;
  /** The outcome was decided while the handler still ran: it finishes apart, unheard. */
  boolean abandoned;
  boolean intentPending;
  boolean intentWritten;
  boolean holdPending;
  /** The deadline passed while the intent was being written. */
  boolean deadlinePassed;
  /** The outcome being held, once decided. */
  HeldResult held;

  Call(CallContext context, ToolSlots slots, CallSink owner, ToolSlots.Permit permit,
      java.time.Instant admittedAt, boolean needsIntent) {
    this.callId = context.callId();
    this.sessionId = context.sessionId();
    this.context = context;
    this.slots = slots;
    this.owner = owner;
    this.permit = permit;
    this.admittedAt = admittedAt;
    this.needsIntent = needsIntent;
  }

  String key() {
    return slots.key;
  }

  /** True when nothing of a cancelled call is still running or being written. */
  boolean settled() {
    return !handlerAlive && !intentPending && !holdPending;
  }

  @Override
  public String toString() {
    return "call " + callId + " (" + slots.key + ", " + state + ")";
  }
}
