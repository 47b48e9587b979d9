package dev.phrony.worker.work;

import dev.phrony.worker.api.AsyncToolHandler;
import dev.phrony.worker.call.CallContext;
import dev.phrony.worker.outbox.HeldResult;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.time.Scheduler;
import dev.phrony.worker.work.Inbound.Invoke;
import java.time.Instant;

/**
 * One call's record, from its invoke to its {@code result_ack}: the only place its state lives
 * while the worker serves it. Every field is read and written only in the dispatcher's serialized
 * context, so there is no lock and no second opinion about where a call stands. The handler sees
 * {@link #context}, which has no way back to this object.
 *
 * <pre>
 *  WAITING --slot--+                  +--intent durable--+
 *  (invoke) -------+--> INTENT -------+                  +--> RUNNING --outcome--> HOLDING
 *                  +------no intent-----------------------+
 *  HOLDING --held, stream live--> SENT --result_ack--> (gone: the outbox released it)
 *  HOLDING --held, stream gone--> DETACHED --invoked again--> SENT
 *  SENT --its stream ended--> DETACHED --not asked for within a lease TTL--> (gone: orphaned)
 *  SENT, DETACHED --its stream killed, handed to a rescue--> HANDED_OVER --rescue registered--> SENT
 *  INTENT, RUNNING, HOLDING --cancel--> CANCELLED --thread, intent, hold done--> (gone)
 *  WAITING --cancel, grace over, stream gone, drain--> (gone)
 * </pre>
 *
 * A held result the worker has no record of (one loaded from disk at start, or orphaned) gets a
 * record again when the runtime invokes its call id: it is sent, so it is {@code SENT}.
 */
final class CallRecord {
  enum State {
    /** Every slot of its tool is taken: it waits, in order, for one (see {@link SlotWaits}). */
    WAITING,
    /** Its intent is being made durable; the handler may not start before it is. */
    INTENT,
    /**
     * Its arguments are checked and its handler runs (on a thread of its own, or started inline).
     */
    RUNNING,
    /** Its outcome is decided and being held (made durable first where the outbox does). */
    HOLDING,
    /** Its result went out on {@link #owner} and waits for the runtime's {@code result_ack}. */
    SENT,
    /** Its result is held, its stream gone: advertised in the next {@code in_flight}. */
    DETACHED,
    /**
     * Its result is held and its stream was killed with the call still tracked there: it was handed
     * to a rescue registration ({@link #owner}), on which it is sent once that is registered,
     * unless the runtime acks it first (it had recorded it already).
     */
    HANDED_OVER,
    /** The runtime cancelled it (or a drain ran out): nothing is ever sent for it. */
    CANCELLED
  }

  final String callId;
  final String sessionId;

  /** {@code tool@version}. */
  final String key;

  /** Its tool's slots; null for a held result of a tool no longer served. */
  final ToolSlots slots;

  /** The invoke that made this record (a waiting call starts from it). */
  final Invoke invoke;

  State state;

  /**
   * The stream its answer goes to (rule 3), or went out on; null once that stream's end was taken
   * in (detached), or the rescue it was handed to.
   */
  CallSink owner;

  /** Its slot; null while waiting and for a resent held result (no slot is taken for those). */
  ToolSlots.Permit permit;

  /** The slot wait's end ({@link Dispatcher#SLOT_GRACE}) while waiting. */
  Scheduler.Handle grace = Scheduler.NONE;

  // ---- from its admission on ----
  CallContext context;

  /** When the invoke was admitted (the clock of the dispatcher's scheduler). */
  Instant admittedAt;

  boolean needsIntent;
  Scheduler.Handle deadline = Scheduler.NONE;

  /** The handler it was started on (its key's, then), and that handler if it never blocks. */
  HandlerCatalog.Entry entry;

  AsyncToolHandler async;

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

  private CallRecord(
      String callId,
      String sessionId,
      String key,
      ToolSlots slots,
      Invoke invoke,
      CallSink owner,
      State state) {
    this.callId = callId;
    this.sessionId = sessionId;
    this.key = key;
    this.slots = slots;
    this.invoke = invoke;
    this.owner = owner;
    this.state = state;
  }

  /** A call just invoked, before it has a slot. */
  static CallRecord invoked(Invoke invoke, ToolSlots slots, CallSink owner) {
    return new CallRecord(
        invoke.callId(), invoke.sessionId(), slots.key, slots, invoke, owner, State.WAITING);
  }

  /** A held result the runtime asked for again, sent on {@code owner}. */
  static CallRecord resent(HeldResult held, ToolSlots slots, Invoke invoke, CallSink owner) {
    CallRecord c =
        new CallRecord(
            held.callId(), held.sessionId(), held.toolKey(), slots, invoke, owner, State.SENT);
    c.held = held;
    return c;
  }

  /** True from admission until its outcome is held (it counts as running). */
  boolean running() {
    return state == State.INTENT || state == State.RUNNING || state == State.HOLDING;
  }

  /** True while its held result is sent or waits for a stream. */
  boolean resultHeld() {
    return state == State.SENT || state == State.DETACHED || state == State.HANDED_OVER;
  }

  /** Gives its slot back, if it has one (idempotent). */
  void releaseSlot() {
    if (permit != null) {
      permit.release();
    }
  }

  /**
   * The classloader whose code this call runs or is still to run: its handler's while that runs,
   * its key's while it waits to start; null once no plugin code of it is left to run.
   */
  ClassLoader loaderInUse() {
    if (handlerAlive) {
      return entry.classLoader();
    }
    boolean toStart =
        entry == null
            && slots != null
            && (state == State.WAITING || state == State.INTENT || state == State.RUNNING);
    return toStart ? slots.entry.classLoader() : null;
  }

  /** True when nothing of a cancelled call is still running or being written. */
  boolean settled() {
    return !handlerAlive && !intentPending && !holdPending;
  }

  @Override
  public String toString() {
    return "call " + callId + " (" + key + ", " + state + ")";
  }
}
