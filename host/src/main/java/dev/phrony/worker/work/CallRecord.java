package dev.phrony.worker.work;

import dev.phrony.worker.api.AsyncToolHandler;
import dev.phrony.worker.call.CallContext;
import dev.phrony.worker.outbox.HeldResult;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.time.Scheduler;
import dev.phrony.worker.work.Inbound.Invoke;
import java.time.Instant;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

/**
 * One call's record, from its invoke to its {@code result_ack}: the only place its state lives
 * while the worker serves it, as a state machine. The states and the transitions allowed between
 * them are written down once, in {@link #NEXT}; every change of state is a method here that checks
 * where the call comes from and throws on a transition the table does not allow (a bug: the
 * dispatcher's context logs it loudly, and every test fails on it). No field is written from
 * outside. All of it is read and written only in the dispatcher's serialized context
 * (docs/architecture.md), so there is no lock and no second opinion about where a call stands. The
 * handler sees {@link #context()}, which has no way back to this object.
 *
 * <pre>
 *  WAITING --slot--> INTENT --intent durable--> RUNNING --outcome--> HOLDING
 *  WAITING --slot, no intent needed-----------> RUNNING
 *  INTENT --intent failed, or deadline passed----------------------> HOLDING
 *  HOLDING --held, stream live--> SENT --result_ack--> (gone: the outbox released it)
 *  HOLDING --held, stream gone--> DETACHED --invoked again--> SENT
 *  SENT --its stream ended--> DETACHED --not asked for within a lease TTL--> (gone: orphaned)
 *  SENT, DETACHED --its stream killed, handed to a rescue--> HANDED_OVER --rescue registered--> SENT
 *  HOLDING --held, its rescue not open yet--> HANDED_OVER
 *  INTENT, RUNNING, HOLDING --cancel--> CANCELLED --thread, intent, hold done--> (gone)
 *  CANCELLED --invoked again while its outcome is being held--> HOLDING
 *  RUNNING --its arguments refused before the handler ran--> NACKED (gone)
 *  WAITING --cancel, grace over, stream gone, drain--> (gone)
 * </pre>
 *
 * Three parts of a call run apart from its state, each a sub-state of its own: its {@link Handler}
 * (not started, running, running on apart once its outcome no longer waits for it, done), its
 * durable {@link Intent} (none, being written, written, refused) and the hold of its outcome (being
 * written or not). A cancelled call leaves once none of them is under way ({@link #settled}).
 *
 * <p>A held result the worker has no record of (one loaded from disk at start, or orphaned) gets a
 * record again when the runtime invokes its call id: it is sent, so it is {@code SENT}.
 */
final class CallRecord {
  enum State {
    /** Every slot of its tool is taken: it waits, in order, for one (see {@link SlotWaits}). */
    WAITING,
    /** It has its slot; its intent is being made durable: the handler may not start before. */
    INTENT,
    /** It has its slot, its arguments are checked and its handler runs (or is about to start). */
    RUNNING,
    /** Its outcome is decided and being held (made durable first where the outbox does). */
    HOLDING,
    /** Its result went out on {@link #owner()} and waits for the runtime's {@code result_ack}. */
    SENT,
    /** Its result is held, its stream gone: advertised in the next {@code in_flight}. */
    DETACHED,
    /**
     * Its result is held and its stream was killed with the call still tracked there: it was handed
     * to a rescue registration ({@link #owner()}), on which it is sent once that is registered,
     * unless the runtime acks it first (it had recorded it already).
     */
    HANDED_OVER,
    /** The runtime cancelled it (or a drain ran out): nothing is ever sent for it. */
    CANCELLED,
    /** Its arguments were refused before its handler ran: a nack went out; it is gone. */
    NACKED
  }

  /** Where its handler is. */
  enum Handler {
    NOT_STARTED,
    RUNNING,
    /** Still running, but its outcome no longer waits for it (cancelled, or past its deadline). */
    APART,
    DONE
  }

  /** Its durable intent (write calls only: see {@code ResultOutbox#needsIntent}). */
  enum Intent {
    NONE,
    WRITING,
    WRITTEN,
    FAILED
  }

  /** The transitions allowed, from each state: the one place they are written down. */
  private static final Map<State, Set<State>> NEXT = new EnumMap<>(State.class);

  static {
    NEXT.put(State.WAITING, EnumSet.of(State.INTENT, State.RUNNING));
    NEXT.put(State.INTENT, EnumSet.of(State.RUNNING, State.HOLDING, State.CANCELLED));
    NEXT.put(State.RUNNING, EnumSet.of(State.HOLDING, State.CANCELLED, State.NACKED));
    NEXT.put(
        State.HOLDING, EnumSet.of(State.SENT, State.DETACHED, State.HANDED_OVER, State.CANCELLED));
    NEXT.put(State.SENT, EnumSet.of(State.SENT, State.DETACHED, State.HANDED_OVER));
    NEXT.put(State.DETACHED, EnumSet.of(State.SENT, State.DETACHED, State.HANDED_OVER));
    NEXT.put(State.HANDED_OVER, EnumSet.of(State.SENT, State.DETACHED, State.HANDED_OVER));
    NEXT.put(State.CANCELLED, EnumSet.of(State.HOLDING));
    NEXT.put(State.NACKED, EnumSet.noneOf(State.class));
  }

  /** What the table of calls counts: calls running, handlers running apart. */
  interface Counts {
    void running(int delta);

    void apart(int delta);
  }

  final String callId;
  final String sessionId;

  /** {@code tool@version}. */
  final String key;

  /** Its tool's slots; null for a held result of a tool no longer served. */
  final ToolSlots slots;

  /** The invoke that made this record (a waiting call starts from it). */
  final Invoke invoke;

  private final Counts counts;
  private State state;
  private CallSink owner;
  private ToolSlots.Permit permit;
  private Scheduler.Handle grace = Scheduler.NONE;
  private CallContext context;
  private Instant admittedAt;
  private Scheduler.Handle deadline = Scheduler.NONE;
  private boolean deadlinePassed;
  private HandlerCatalog.Entry entry;
  private AsyncToolHandler async;
  private Thread thread;
  private Handler handler = Handler.NOT_STARTED;
  private Intent intent = Intent.NONE;
  private boolean holdWriting;
  private HeldResult held;

  private CallRecord(
      String callId,
      String sessionId,
      String key,
      ToolSlots slots,
      Invoke invoke,
      CallSink owner,
      State state,
      Counts counts) {
    this.callId = callId;
    this.sessionId = sessionId;
    this.key = key;
    this.slots = slots;
    this.invoke = invoke;
    this.owner = owner;
    this.state = state;
    this.counts = counts;
  }

  /** A call just invoked, before it has a slot. */
  static CallRecord invoked(Invoke invoke, ToolSlots slots, CallSink owner, Counts counts) {
    return new CallRecord(
        invoke.callId(),
        invoke.sessionId(),
        slots.key,
        slots,
        invoke,
        owner,
        State.WAITING,
        counts);
  }

  /** A held result the runtime asked for again, about to be sent on {@code owner}. */
  static CallRecord resent(
      HeldResult held, ToolSlots slots, Invoke invoke, CallSink owner, Counts counts) {
    CallRecord c =
        new CallRecord(
            held.callId(),
            held.sessionId(),
            held.toolKey(),
            slots,
            invoke,
            owner,
            State.DETACHED,
            counts);
    c.held = held;
    return c;
  }

  // ---- transitions ----

  private void to(State next) {
    if (!NEXT.get(state).contains(next)) {
      throw new IllegalStateException(this + ": no transition to " + next);
    }
    boolean was = running();
    state = next;
    boolean is = running();
    if (was != is) {
      counts.running(is ? 1 : -1);
    }
  }

  private void require(boolean ok, String what) {
    if (!ok) {
      throw new IllegalStateException(this + ": " + what);
    }
  }

  /** It waits for a slot, up to {@code grace}. */
  void waiting(Scheduler.Handle grace) {
    require(state == State.WAITING, "waits for a slot only before it has one");
    this.grace = grace;
  }

  /**
   * It took a slot: from now on it counts as running, with the context its handler will see; its
   * intent is written first where {@code needsIntent}.
   */
  void admitted(ToolSlots.Permit permit, CallContext context, Instant at, boolean needsIntent) {
    grace.cancel();
    this.permit = permit;
    this.context = context;
    this.admittedAt = at;
    to(needsIntent ? State.INTENT : State.RUNNING);
  }

  /** Its deadline's timer (cancelled once its outcome is decided, or it is cancelled). */
  void deadline(Scheduler.Handle timer) {
    require(running(), "has a deadline only while it runs");
    this.deadline = timer;
  }

  /** Its intent is being made durable. */
  void intentWriting() {
    require(state == State.INTENT && intent == Intent.NONE, "writes its intent once, first");
    intent = Intent.WRITING;
  }

  /** The intent write came back: written, or refused by the disk. */
  void intentDone(boolean written) {
    require(intent == Intent.WRITING, "an intent write returned that was not under way");
    intent = written ? Intent.WRITTEN : Intent.FAILED;
  }

  /** Its deadline passed while its intent was being written: it is answered once that returns. */
  void deadlinePassedDuringIntent() {
    require(state == State.INTENT, "only an intent write defers a deadline");
    deadlinePassed = true;
  }

  /** Its handler starts, on {@code entry} (its key's now, even if rebound later). */
  void handlerStarted(HandlerCatalog.Entry entry, AsyncToolHandler async) {
    require(handler == Handler.NOT_STARTED, "its handler starts once");
    if (state == State.INTENT) {
      to(State.RUNNING);
    }
    require(state == State.RUNNING, "its handler starts once it has its slot (and intent)");
    this.entry = entry;
    this.async = async;
    handler = Handler.RUNNING;
  }

  /** The handler's own thread, to interrupt. */
  void runsOn(Thread thread) {
    require(handler == Handler.RUNNING, "only a running handler has a thread");
    this.thread = thread;
  }

  /**
   * Its handler finished (its thread ended or its stage completed).
   *
   * @return true if it had been running apart: its outcome is dropped
   */
  boolean handlerFinished() {
    require(
        handler == Handler.RUNNING || handler == Handler.APART,
        "a handler finishes once, after it started");
    boolean apart = handler == Handler.APART;
    if (apart) {
      counts.apart(-1);
    }
    handler = Handler.DONE;
    return apart;
  }

  /** Its outcome is decided without its handler (deadline, cancel): the handler runs on apart. */
  private void abandon() {
    if (handler == Handler.RUNNING) {
      handler = Handler.APART;
      counts.apart(1);
    }
  }

  /** Its deadline passed while its handler ran: the outcome is decided without it. */
  void deadlinePassedWhileRunning() {
    require(state == State.RUNNING, "its handler runs");
    abandon();
  }

  /** Its outcome is decided: {@code held} is being held (durably where the outbox does). */
  void decided(HeldResult held) {
    deadline.cancel();
    to(State.HOLDING);
    this.held = held;
    holdWriting = true;
  }

  /**
   * The hold of its outcome returned (in state {@code HOLDING}, or {@code CANCELLED} meanwhile).
   */
  void holdDone() {
    require(holdWriting, "a hold returned that was not under way");
    holdWriting = false;
  }

  /** Its held result went out on {@code on}: it waits for the ack there. */
  void sent(CallSink on) {
    require(held != null, "only a held result is sent");
    owner = on;
    to(State.SENT);
  }

  /**
   * Its held result could not go out on {@code on}, whose stream has just ended: it waits for that
   * end to be taken in (detached, or handed over).
   */
  void unsent(CallSink on) {
    require(held != null, "only a held result is sent");
    owner = on;
    to(State.DETACHED);
  }

  /**
   * Its held result waits for a stream: its stream is gone, or ended as it was sent. The owner
   * stays until that stream's end is taken in ({@link #detached}): it may hand the call over.
   */
  void waitsForStream() {
    require(held != null, "only a held result waits for a stream");
    to(State.DETACHED);
  }

  /** Its stream's end was taken in: the runtime dropped it (see {@link StreamEnds#detach}). */
  void detached() {
    if (resultHeld()) {
      to(State.DETACHED);
    } else {
      releaseSlot();
    }
    owner = null;
  }

  /**
   * Its stream was killed and kept as a dead entry: it moves to the rescue registration {@code to}
   * (see {@link StreamEnds#handOver}); its slot was the dead entry's.
   */
  void handedTo(CallSink to) {
    if (resultHeld()) {
      to(State.HANDED_OVER);
    } else {
      releaseSlot();
    }
    owner = to;
  }

  /**
   * Its result is held, and the rescue it was handed to is not open yet: it goes out once that is
   * registered, with the rest of the rescue's held results.
   */
  void waitsForRescue() {
    require(held != null, "only a held result waits for its rescue");
    to(State.HANDED_OVER);
  }

  /** The runtime invoked it again on {@code sink} while it runs (rule 5): it answers there. */
  void attach(CallSink sink) {
    require(running() || state == State.CANCELLED, "attaches while it runs");
    if (state == State.CANCELLED) {
      to(State.HOLDING); // its outcome is being held: the runtime now wants it after all
    }
    owner = sink;
    if (permit.released()) {
      permit = slots.acquire(); // the runtime counts this invoke in a slot
    }
  }

  /**
   * Cancelled by the runtime or a drain: its slot is free, its deadline off, and nothing is ever
   * sent for it; a handler still running runs on apart.
   *
   * @return the state it was cancelled in
   */
  State cancelled() {
    State was = state;
    to(State.CANCELLED);
    releaseSlot();
    deadline.cancel();
    abandon();
    return was;
  }

  /** Its nack went out (its arguments were refused before its handler ran): it is done. */
  void refused() {
    deadline.cancel();
    releaseSlot();
    to(State.NACKED);
  }

  /** Gives its slot back, if it has one (idempotent). */
  void releaseSlot() {
    if (permit != null) {
      permit.release();
    }
  }

  // ---- what it is ----

  State state() {
    return state;
  }

  /** The stream its answer goes to (rule 3) or went out on; null once that stream's end is in. */
  CallSink owner() {
    return owner;
  }

  Scheduler.Handle grace() {
    return grace;
  }

  CallContext context() {
    return context;
  }

  Instant admittedAt() {
    return admittedAt;
  }

  boolean deadlinePassed() {
    return deadlinePassed;
  }

  /** The handler it started on; null before. */
  HandlerCatalog.Entry entry() {
    return entry;
  }

  /** That handler if it never blocks; null for one that may. */
  AsyncToolHandler async() {
    return async;
  }

  Thread thread() {
    return thread;
  }

  /** True from the handler's start to its "finished" event (its thread ended or its stage done). */
  boolean handlerAlive() {
    return handler == Handler.RUNNING || handler == Handler.APART;
  }

  /** True while its handler runs on after its outcome was decided without it. */
  boolean abandoned() {
    return handler == Handler.APART;
  }

  boolean intentWritten() {
    return intent == Intent.WRITTEN;
  }

  /** The outcome being held, once decided. */
  HeldResult held() {
    return held;
  }

  /** True from admission until its outcome is held (it counts as running). */
  boolean running() {
    return state == State.INTENT || state == State.RUNNING || state == State.HOLDING;
  }

  /** True while its held result is sent or waits for a stream. */
  boolean resultHeld() {
    return state == State.SENT || state == State.DETACHED || state == State.HANDED_OVER;
  }

  /**
   * The classloader whose code this call runs or is still to run: its handler's while that runs,
   * its key's while it waits to start; null once no plugin code of it is left to run.
   */
  ClassLoader loaderInUse() {
    if (handlerAlive()) {
      return entry.classLoader();
    }
    boolean toStart =
        handler == Handler.NOT_STARTED
            && slots != null
            && (state == State.WAITING || state == State.INTENT || state == State.RUNNING);
    return toStart ? slots.entry.classLoader() : null;
  }

  /** True when nothing of a cancelled call is still running or being written. */
  boolean settled() {
    return !handlerAlive() && intent != Intent.WRITING && !holdWriting;
  }

  @Override
  public String toString() {
    return "call " + callId + " (" + key + ", " + state + ", handler " + handler + ")";
  }
}
