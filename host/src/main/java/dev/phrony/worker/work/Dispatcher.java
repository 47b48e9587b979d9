package dev.phrony.worker.work;

import dev.phrony.worker.call.CallContext;
import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.call.CallPipeline;
import dev.phrony.worker.ops.InvocationOutcome;
import dev.phrony.worker.ops.LogContext;
import dev.phrony.worker.ops.ToolMetrics;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.outbox.DiskErrors;
import dev.phrony.worker.outbox.HeldResult;
import dev.phrony.worker.outbox.IntentRecord;
import dev.phrony.worker.outbox.ResultOutbox;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.time.Scheduler;
import dev.phrony.worker.work.Inbound.Invoke;
import io.grpc.Status;
import io.grpc.SynchronizationContext;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one owner of every call's state (design.md "the flow of one call"). Each transition of a
 * call, from the stream (invoke, cancel, ack, the stream's end), from its handler's thread
 * (completed), from the outbox (intent or result durable) or from a timer (deadline, slot grace),
 * is a task in one {@link SynchronizationContext}: tasks run one at a time, in order, on the
 * stream's event loop (where every cancel is read first, see {@link #post}), so there are no locks
 * and no state split between threads. Handler threads and the outbox writer only post what came of
 * their work; they never decide whether to send.
 *
 * <p>Each call is one {@link CallRecord} in the {@link CallTable}, from its invoke to its ack. The
 * parts that share the context: this class admits invokes, decides and holds outcomes, cancels and
 * drains; {@link SlotWaits} queues invokes that found no slot; {@link CallStarter} starts handlers;
 * {@link OrphanPolicy} judges held results across streams (protocol.md rules 3 and 9).
 *
 * <p>Outlives streams: a call started on one stream may finish after a reconnect; its result is
 * then held for the runtime to ask for again. Slots are counted as the runtime counts them
 * (protocol.md rule 6): a {@link ToolSlots.Permit} taken by the invoke and released by our result
 * or nack, by the runtime's cancel, or by the end of the stream (the runtime then drops the
 * registration and its counts).
 */
public final class Dispatcher {
  private static final Logger log = LoggerFactory.getLogger(Dispatcher.class);

  /** Nack codes (rule 6) and error codes this host produces. */
  static final String UNKNOWN_TOOL = "unknown_tool";

  static final String CAPACITY_EXHAUSTED = "capacity_exhausted";
  static final String INVALID_ARGS = CallPipeline.INVALID_ARGS;
  static final String DRAINING = "draining";
  static final String PREVIOUS_ATTEMPT_INTERRUPTED = "previous_attempt_interrupted";
  static final String INTENT_NOT_DURABLE = "intent_not_durable";

  /**
   * How long an invoke that found every slot taken waits for the cancel that made room for it (see
   * {@link SlotWaits}) before it is nacked {@code capacity_exhausted}.
   */
  static final Duration SLOT_GRACE = Duration.ofSeconds(1);

  /** How long a handleAsync may hold the I/O thread before each heartbeat tick reports it. */
  static final long STALLED_START_MS = 1_000;

  private final ResultOutbox outbox;
  private final CallPipeline pipeline;
  private final Scheduler scheduler;
  private final InstantSource clock;
  private final SynchronizationContext context;

  /** True on the stream's event loop (where a non-blocking handler may start inline). */
  private final BooleanSupplier onIoThread;

  /** The stream's event loop, where the context runs; null: where a task is posted (tests). */
  private final Executor loop;

  /** The handlers of the first registration (and of any sink that names none). */
  private final HandlerSet initial;

  /** Every set a live registration (or its winding-down calls) may use: for the slot gauges. */
  private final List<HandlerSet> sets = new CopyOnWriteArrayList<>();

  /** One set of meters per key, whichever generation of handlers serves it. */
  private final Map<String, ToolMetrics> meters = new ConcurrentHashMap<>();

  private final WorkerMetrics metrics;
  private final ToolMetrics unknownTool;
  private final WireTimings timings = new WireTimings();

  // ---- confined to the context ----
  private final CallTable calls = new CallTable();
  private final OrphanPolicy orphans;
  private final SlotWaits slotWaits;
  private final CallStarter starter;
  private final List<CompletableFuture<Void>> idleWaiters = new ArrayList<>();

  /** Futures completed once no call matches their test (a stream's or a plugin's calls done). */
  private final List<Waiter> noneWaiters = new ArrayList<>();

  private record Waiter(Predicate<CallRecord> test, CompletableFuture<Void> done) {}

  // ---- written in the context, read anywhere (metrics, readiness, tests) ----
  private volatile int active;
  private volatile int apart;
  private volatile boolean draining;

  public Dispatcher(
      HandlerCatalog catalog, ResultOutbox outbox, CallPipeline pipeline, Scheduler scheduler) {
    this(catalog, outbox, pipeline, scheduler, WorkerMetrics.NONE, () -> false, null);
  }

  /**
   * With metrics (the meters of every {@code tool@version} are resolved here, once), the test of
   * the thread on which an {@code AsyncToolHandler} may start inline (the stream's I/O thread,
   * where the invoke arrived; anywhere else its calls start on a virtual thread), and {@code loop},
   * that thread's executor: every transition runs there (see {@link #post}); null runs each where
   * it is posted.
   */
  public Dispatcher(
      HandlerCatalog catalog,
      ResultOutbox outbox,
      CallPipeline pipeline,
      Scheduler scheduler,
      WorkerMetrics metrics,
      BooleanSupplier onIoThread,
      Executor loop) {
    this.outbox = outbox;
    this.onIoThread = onIoThread;
    this.loop = loop;
    this.pipeline = pipeline;
    this.scheduler = scheduler;
    this.clock = scheduler.clock();
    this.context =
        new SynchronizationContext(
            (t, e) -> {
              log.error("call state transition failed (a bug; the call may be stuck)", e);
              Thread.UncaughtExceptionHandler process = Thread.getDefaultUncaughtExceptionHandler();
              if (e instanceof Error && process != null) {
                process.uncaughtException(t, e); // in the worker: a core thread's Error ends it
              }
            });
    this.orphans = new OrphanPolicy(outbox, scheduler, this::post, calls);
    this.slotWaits =
        new SlotWaits(
            scheduler,
            this::post,
            SLOT_GRACE,
            new SlotWaits.Ends() {
              @Override
              public void slotFree(CallRecord call) {
                tryStart(call, true);
              }

              @Override
              public void gaveUp(CallRecord call) {
                calls.remove(call);
                nack(
                    call.owner,
                    call.invoke,
                    call.slots,
                    InvocationOutcome.NACK_CAPACITY_EXHAUSTED,
                    CAPACITY_EXHAUSTED,
                    call.key
                        + " is running its maximum of "
                        + call.slots.max
                        + " calls on this worker");
                checkIdle();
              }
            });
    this.starter = new CallStarter(pipeline, clock, onIoThread, this::post, this::finished);
    this.metrics = metrics;
    this.initial = handlerSet(catalog);
    this.unknownTool = metrics.unknownTool();
  }

  /**
   * The handlers of a new registration, each key with slots of its own (the runtime counts them per
   * registration); its meters are the key's, shared with every other generation.
   */
  HandlerSet handlerSet(HandlerCatalog catalog) {
    HandlerSet set =
        new HandlerSet(
            catalog,
            e -> {
              int max = slotsOf(e);
              return new ToolSlots(
                  e,
                  max,
                  s -> meters.computeIfAbsent(s.key, k -> metrics.tool(k, max, () -> busy(k))));
            });
    set.all().forEach(s -> s.onFreed(() -> context.execute(() -> slotWaits.slotFreed(s))));
    sets.add(set);
    return set;
  }

  /** {@code set}'s registration is gone and none of its calls holds a slot. */
  void dropHandlerSet(HandlerSet set) {
    if (set != initial) {
      sets.remove(set);
    }
  }

  /** The handlers of the first registration. */
  HandlerSet initialHandlers() {
    return initial;
  }

  /** Largest number of calls the runtime may give a key at once: its advertised concurrency. */
  static int slotsOf(HandlerCatalog.Entry e) {
    return Math.max(1, e.descriptor().maxConcurrency());
  }

  /** Runs {@code task} in the context that owns the calls (after what is queued there). */
  void execute(Runnable task) {
    post(task);
  }

  /**
   * Every transition is posted here, from any thread. In the worker the context runs on the
   * stream's event loop only: there the inbound path has already read every cancel that came
   * before, so no decision to send is made on a thread that cannot see one (a handler's thread or
   * the outbox writer draining the context would decide ahead of a cancel the I/O thread holds).
   * Tests without a loop run it where it is posted.
   */
  private void post(Runnable task) {
    if (loop == null || onIoThread.getAsBoolean()) {
      context.execute(task);
    } else {
      loop.execute(() -> context.execute(task));
    }
  }

  // ---- from the stream ----

  void onInvoke(Invoke invoke, CallSink sink) {
    post(() -> admit(invoke, sink));
  }

  void onCancel(String callId, CallSink sink) {
    long posted = System.nanoTime();
    post(
        () -> {
          timings.record(WireTimings.Interval.ON_CANCEL_TO_OWNER, System.nanoTime() - posted);
          cancelled(callId, sink);
          sink.cancelTaken(callId); // from now on the call's state keeps anything from being sent
        });
  }

  void onResultAck(String callId) {
    post(
        () -> {
          orphans.acked(callId);
          checkIdle();
        });
  }

  /** {@code sink} is registered: results of older streams are judged against its window. */
  void onRegistered(CallSink sink, Set<String> advertised, Duration ttl) {
    post(() -> orphans.registered(sink, advertised, ttl));
  }

  /** The stream {@code sink} ended: its calls run on apart and its slots are gone. */
  void onStreamEnded(CallSink sink, Status status) {
    post(
        () -> {
          for (CallRecord c : calls.all()) {
            if (c.owner != sink) {
              continue;
            }
            if (c.state == CallRecord.State.WAITING) {
              slotWaits.stop(c); // the runtime made it indeterminate with its stream
              calls.remove(c);
            } else if (c.running() || c.state == CallRecord.State.CANCELLED) {
              c.owner = null;
              c.releaseSlot();
            }
          }
          orphans.streamEnded(sink, status);
          checkIdle();
        });
  }

  /** Stops taking work: every later invoke is nacked {@code draining}. */
  void startDraining() {
    post(
        () -> {
          draining = true;
          for (CallRecord c : calls.all()) {
            if (c.state == CallRecord.State.WAITING && slotWaits.stop(c)) {
              calls.remove(c);
              nackDraining(c.owner, c.invoke, c.slots);
            }
          }
          checkIdle();
        });
  }

  /**
   * Completes once no call is running or being held and no result sent on an open stream waits for
   * its ack (checked while draining).
   */
  CompletableFuture<Void> whenIdle() {
    CompletableFuture<Void> f = new CompletableFuture<>();
    post(
        () -> {
          idleWaiters.add(f);
          checkIdle();
        });
    return f;
  }

  /** Cancels every call still running (end of a drain): nothing more is sent for them. */
  void cancelAll() {
    post(
        () ->
            calls
                .all()
                .forEach(
                    c -> {
                      if (c.running()) {
                        cancel(c, "the drain timeout passed");
                      }
                    }));
  }

  /**
   * Calls the runtime should be told about at register: running ones and held results, except those
   * of a stream that is still open (an older generation's): listed, they would move to the
   * registering id, and their answers on their own stream would then be refused.
   */
  Set<String> inFlightIds() {
    context.throwIfNotInThisSynchronizationContext();
    Set<String> ids = new HashSet<>();
    Set<String> onOpenStreams = new HashSet<>();
    for (CallRecord c : calls.view()) {
      if (c.owner != null && c.owner.live()) {
        onOpenStreams.add(c.callId);
      } else if (c.running()) {
        ids.add(c.callId);
      }
    }
    ids.addAll(outbox.pendingIds());
    ids.addAll(outbox.interruptedIds());
    ids.removeAll(onOpenStreams);
    return ids;
  }

  // ---- plugin generations (all posted to the context) ----

  /**
   * Later calls of {@code set}'s keys start on {@code next}'s handlers, which advertise exactly
   * what the set does: a plugin rebuilt with the same descriptors needs nothing on the wire.
   */
  void rebind(HandlerSet set, HandlerCatalog next) {
    post(() -> set.rebind(next));
  }

  /**
   * Completes once nothing of {@code sink}'s calls is left on it: none waits, runs or is being
   * held, and every result sent on it was acked. Then the stream may close without making any call
   * indeterminate.
   */
  CompletableFuture<Void> whenIdleOn(CallSink sink) {
    return whenNone(
        c ->
            c.owner == sink
                && (c.state == CallRecord.State.WAITING
                    || c.running()
                    || c.state == CallRecord.State.SENT));
  }

  /** Completes once no call runs, or is still to run, code of {@code loaders}. */
  CompletableFuture<Void> whenUnused(Set<ClassLoader> loaders) {
    return whenNone(
        c -> {
          ClassLoader l = c.loaderInUse();
          return l != null && loaders.contains(l);
        });
  }

  private CompletableFuture<Void> whenNone(Predicate<CallRecord> test) {
    CompletableFuture<Void> f = new CompletableFuture<>();
    post(
        () -> {
          noneWaiters.add(new Waiter(test, f));
          checkIdle();
        });
    return f;
  }

  /**
   * Cancels {@code sink}'s calls that still run or wait (an old generation's stream outlived the
   * drain timeout after its handover): as at the end of a drain, nothing more is sent for them, and
   * what they still produce is kept as orphaned.
   */
  void cancelOn(CallSink sink, String why) {
    post(
        () -> {
          for (CallRecord c : calls.all()) {
            if (c.owner != sink) {
              continue;
            }
            if (c.state == CallRecord.State.WAITING && slotWaits.stop(c)) {
              calls.remove(c);
              nackDraining(c.owner, c.invoke, c.slots);
            } else if (c.running()) {
              cancel(c, why);
            }
          }
          checkIdle();
        });
  }

  // ---- views, from any thread ----

  /**
   * From the heartbeat's timer, whose beats such a start holds back: a handleAsync that has kept
   * the stream's I/O thread over a second is logged with where it is, and returned.
   */
  Optional<CallStarter.StalledStart> reportStalledStart() {
    return starter.reportStalledStart(STALLED_START_MS);
  }

  /** Calls admitted whose outcome is not held yet (cancelled ones excluded). */
  int runningCount() {
    return active;
  }

  /** Where cancels and results spend their time between the socket and the owner. */
  public WireTimings timings() {
    return timings;
  }

  /** Slots in use for {@code key}, over every registration of it. */
  public int busy(String key) {
    int busy = 0;
    for (HandlerSet set : sets) {
      ToolSlots t = set.get(key);
      busy += t == null ? 0 : t.busy();
    }
    return busy;
  }

  /** True once draining started: every new invoke is nacked. */
  public boolean draining() {
    return draining;
  }

  /** Handlers whose call was cancelled (or outlived its deadline) and that still run. */
  public int runningApart() {
    return apart;
  }

  // ---- admission (all in the context) ----

  private void admit(Invoke invoke, CallSink sink) {
    String callId = invoke.callId();
    CallRecord existing = calls.get(callId);
    if (existing != null && existing.state == CallRecord.State.WAITING) {
      slotWaits.stop(existing); // invoked again (its stream was replaced): it waits as this one
      calls.remove(existing);
      existing = null;
    }
    if (existing != null && existing.resultHeld()) {
      resend(existing, invoke, sink);
      return;
    }
    if (existing != null) {
      invokedAgain(existing, invoke, sink);
      return;
    }
    HandlerSet set = sink.handlers();
    ToolSlots slots = (set == null ? initial : set).find(invoke.tool(), invoke.version());
    Optional<HeldResult> held = outbox.find(callId);
    if (held.isPresent()) {
      CallRecord call = CallRecord.resent(held.get(), slots, invoke, sink);
      calls.put(call);
      resend(call, invoke, sink);
      return;
    }
    if (outbox.wasInterrupted(callId)) {
      // A previous attempt may have acted before the worker stopped: never run it twice.
      nack(
          sink,
          invoke,
          slots,
          InvocationOutcome.NACK_PREVIOUS_ATTEMPT_INTERRUPTED,
          PREVIOUS_ATTEMPT_INTERRUPTED,
          "a previous attempt of this call was interrupted and may"
              + " have acted; see 'phrony-worker outbox show "
              + callId
              + "'");
      return;
    }
    if (draining) {
      nackDraining(sink, invoke, slots);
      return;
    }
    if (slots == null) {
      nack(
          sink,
          invoke,
          null,
          InvocationOutcome.NACK_UNKNOWN_TOOL,
          UNKNOWN_TOOL,
          "this worker serves no handler for " + invoke.tool() + "@" + invoke.version());
      return;
    }
    CallRecord call = CallRecord.invoked(invoke, slots, sink);
    calls.put(call);
    tryStart(call, false);
  }

  /** Rule 5: the handler ran; the runtime invoked it again, so it expects the held result. */
  private void resend(CallRecord call, Invoke invoke, CallSink sink) {
    debug(invoke, "invoke of a held call: resending its result");
    if (outbox.isOrphaned(call.callId)) {
      outbox.holdAsync(call.held); // no longer orphaned: the runtime asks for it
    }
    call.owner = sink;
    send(call);
  }

  /**
   * Takes a slot and starts {@code call}, or has it wait for one. {@code waited}: it waited and is
   * first in line, so it may take a free slot; otherwise none overtakes an invoke that waits.
   */
  private void tryStart(CallRecord call, boolean waited) {
    ToolSlots slots = call.slots;
    ToolSlots.Permit permit = waited || !SlotWaits.othersWait(slots) ? slots.tryAcquire() : null;
    if (permit == null) {
      slotWaits.await(call);
      debug(call.invoke, "every slot taken: waiting for one");
      return;
    }
    Invoke invoke = call.invoke;
    long deadline = deadlineOf(invoke, slots);
    call.permit = permit;
    call.context =
        new CallContext(
            call.callId,
            invoke.sessionId(),
            invoke.agentVersionId(),
            invoke.turn(),
            invoke.tool(),
            invoke.version(),
            invoke.sideEffectClass(),
            deadline,
            invoke.argsBuffer(),
            pipeline.codec());
    call.admittedAt = now();
    call.needsIntent = outbox.needsIntent(slots.sideEffectClass);
    call.state = CallRecord.State.RUNNING; // counted as running from here on
    active++;
    debug(invoke, "invoke admitted");
    if (deadline > 0) {
      long leftMs = deadline - clock.millis();
      if (leftMs <= 0) { // passed already: the handler is not started at all
        decide(call, CallPipeline.deadlineExceeded(0), InvocationOutcome.DEADLINE_EXCEEDED, false);
        return;
      }
      call.deadline =
          scheduler.schedule(() -> post(() -> deadlinePassed(call)), Duration.ofMillis(leftMs));
    }
    if (call.needsIntent) {
      recordIntent(call);
    } else {
      starter.start(call);
    }
  }

  /**
   * When the call must end, epoch ms (0: never): the session's deadline, or the handler's bound
   * from now (an operator's {@code deadline} setting), whichever comes first.
   */
  private long deadlineOf(Invoke invoke, ToolSlots slots) {
    long session = invoke.deadlineUnixMs();
    if (slots.maxRunTimeMs <= 0) {
      return session;
    }
    long bound = clock.millis() + slots.maxRunTimeMs;
    return session > 0 ? Math.min(session, bound) : bound;
  }

  /** Rule 5: an invoke for a call still running attaches to it; the handler runs once. */
  private void invokedAgain(CallRecord call, Invoke invoke, CallSink sink) {
    if (call.state == CallRecord.State.CANCELLED && call.held == null) {
      nack(
          sink,
          invoke,
          call.slots,
          InvocationOutcome.NACK_PREVIOUS_ATTEMPT_INTERRUPTED,
          PREVIOUS_ATTEMPT_INTERRUPTED,
          "this call was cancelled while its handler ran, which may"
              + " have acted; it is not run a second time");
      return;
    }
    if (call.state == CallRecord.State.CANCELLED) {
      call.state = CallRecord.State.HOLDING; // its outcome is being held: the runtime now wants it
      active++;
    }
    call.owner = sink;
    if (call.permit.released()) {
      call.permit = call.slots.acquire(); // the runtime counts this invoke in a slot
    }
    debug(invoke, "invoke of a running call attached to this stream");
  }

  private void recordIntent(CallRecord call) {
    call.state = CallRecord.State.INTENT;
    call.intentPending = true;
    CompletableFuture<Void> written;
    try {
      written =
          outbox.recordIntentAsync(
              new IntentRecord(
                  call.callId,
                  call.sessionId,
                  call.key,
                  call.slots.sideEffectClass,
                  call.admittedAt));
    } catch (RuntimeException e) {
      written = CompletableFuture.failedFuture(e);
    }
    written.whenComplete((v, e) -> post(() -> intentDone(call, e)));
  }

  private void intentDone(CallRecord call, Throwable failure) {
    call.intentPending = false;
    call.intentWritten = failure == null;
    if (call.state == CallRecord.State.CANCELLED) {
      if (call.intentWritten) {
        cancelledAfterIntent(call);
      }
      forgetIfSettled(call);
      return;
    }
    if (failure != null) {
      Throwable cause = unwrap(failure);
      try (var ctx = context(call)) {
        log.error("intent could not be made durable ({}); not running the call", cause.toString());
      }
      decide(
          call,
          CallOutcome.error(
              INTENT_NOT_DURABLE,
              "the worker could not record its intent"
                  + " durably, so it did not run the call: "
                  + DiskErrors.reason(cause)),
          InvocationOutcome.TOOL_ERROR,
          false);
      return;
    }
    if (call.deadlinePassed) {
      decide(
          call,
          CallPipeline.deadlineExceeded(elapsedMs(call)),
          InvocationOutcome.DEADLINE_EXCEEDED,
          false);
      return;
    }
    starter.start(call);
  }

  // ---- outcome (all in the context) ----

  /** The "finished" event of a start ({@link CallStarter}): the handler's outcome, or why none. */
  private void finished(
      CallRecord call, CallOutcome outcome, CallPipeline.Refusal refusal, long ranNanos) {
    handlerDone(call, outcome, refusal, ranNanos);
    checkIdle(); // its plugin's code is no longer in use by it
  }

  private void handlerDone(
      CallRecord call, CallOutcome outcome, CallPipeline.Refusal refusal, long ranNanos) {
    call.handlerAlive = false;
    if (ranNanos > 0) {
      call.slots.metrics.handlerTime(Duration.ofNanos(ranNanos));
    }
    if (call.abandoned) {
      apart--;
      try (var ctx = context(call)) {
        log.info(
            "handler of a {} call finished after {} ms; its outcome is dropped",
            call.state == CallRecord.State.CANCELLED ? "cancelled" : "timed-out",
            elapsedMs(call));
      }
      forgetIfSettled(call);
      return;
    }
    if (refusal != null && refusal.nack()) {
      call.slots.metrics.count(InvocationOutcome.NACK_INVALID_ARGS);
      if (call.intentWritten) {
        outbox.dropIntent(call.callId); // the handler never started
      }
      call.deadline.cancel();
      calls.remove(call);
      active--;
      call.releaseSlot();
      if (call.owner != null && call.owner.live()) {
        log.debug("nack {}: {}", refusal.code(), refusal.message());
        call.owner.sendNack(call.callId, refusal.code(), refusal.message());
      }
      return;
    }
    if (refusal != null) {
      decide(
          call,
          CallOutcome.error(refusal.code(), refusal.message()),
          InvocationOutcome.TOOL_ERROR,
          false);
      return;
    }
    if (outcome == null) { // cancelled before it started: the cancel decided already
      forgetIfSettled(call);
      return;
    }
    decide(
        call,
        outcome,
        outcome instanceof CallOutcome.Payload
            ? InvocationOutcome.RESULT
            : InvocationOutcome.TOOL_ERROR);
  }

  /** The outcome of a handler that ran: hold it (durably if the outbox does), then send it. */
  private void decide(CallRecord call, CallOutcome outcome, InvocationOutcome counted) {
    decide(call, outcome, counted, true);
  }

  /**
   * The outcome stands: hold it, then send it. One the handler never produced (it did not run) is
   * held in memory only: a second run after a crash could not repeat an effect, and it must not
   * wait for a disk that refuses writes.
   */
  private void decide(
      CallRecord call, CallOutcome outcome, InvocationOutcome counted, boolean handlerRan) {
    call.deadline.cancel();
    call.slots.metrics.count(counted);
    HeldResult held =
        new HeldResult(
            call.callId, call.sessionId, call.key, call.slots.sideEffectClass, now(), outcome);
    call.state = CallRecord.State.HOLDING;
    call.held = held;
    call.holdPending = true;
    CompletableFuture<Void> f;
    try {
      f = handlerRan ? outbox.holdAsync(held) : outbox.holdInMemoryAsync(held);
    } catch (RuntimeException e) {
      f = CompletableFuture.failedFuture(e);
    }
    if (f.isDone()) {
      held(call, f.isCompletedExceptionally() ? f.handle((v, e) -> e).join() : null);
    } else {
      f.whenComplete((v, e) -> post(() -> held(call, e)));
    }
  }

  private void held(CallRecord call, Throwable failure) {
    call.holdPending = false;
    if (failure != null) {
      try (var ctx = context(call)) {
        log.error("result could not be held: {}", unwrap(failure).toString());
      }
    }
    if (call.state == CallRecord.State.CANCELLED) {
      // Race 1: the cancel came while the result was being made durable. The runtime has
      // forgotten the call, so the result must not go out; it is kept for an operator.
      outbox.markOrphaned(call.callId);
      try (var ctx = context(call)) {
        log.info("call was cancelled while its result was being held; kept as orphaned");
      }
      forgetIfSettled(call);
      return;
    }
    call.deadline.cancel();
    active--;
    CallSink owner = call.owner;
    if (owner != null && owner.live()) {
      call.releaseSlot();
      send(call);
    } else {
      // Rule 3: its stream is gone; kept for in_flight, never sent on another stream.
      orphans.heldWithoutStream(call);
    }
    checkIdle();
  }

  /** Sends {@code call}'s held result on its owner: it then waits for the ack there. */
  private void send(CallRecord call) {
    if (call.owner.sendResult(call.held)) {
      call.state = CallRecord.State.SENT;
    } else {
      call.state = CallRecord.State.DETACHED;
      call.owner = null;
    }
  }

  // ---- cancel and deadline (all in the context) ----

  /** Rule 4: interrupt, free the slot, and send nothing for this call, ever. */
  private void cancelled(String callId, CallSink sink) {
    CallRecord call = calls.get(callId);
    if (call != null && call.state == CallRecord.State.WAITING) {
      // Cancelled before a slot came: it never started, nothing is sent.
      slotWaits.stop(call);
      calls.remove(call);
      call.slots.metrics.count(InvocationOutcome.CANCELLED);
      checkIdle();
      return;
    }
    if (call == null || call.resultHeld()) {
      orphans.cancelledAfterFinish(callId, sink);
      checkIdle();
      return;
    }
    if (call.state != CallRecord.State.CANCELLED) {
      cancel(call, "cancelled by the runtime");
    }
  }

  private void cancel(CallRecord call, String why) {
    CallRecord.State was = call.state;
    call.state = CallRecord.State.CANCELLED;
    call.releaseSlot();
    call.deadline.cancel();
    active--;
    if (was != CallRecord.State.HOLDING) { // a held outcome was counted, and it may have acted
      call.slots.metrics.count(InvocationOutcome.CANCELLED);
      if (call.intentWritten) {
        cancelledAfterIntent(call);
      }
    }
    if (call.handlerAlive && !call.abandoned) {
      call.abandoned = true;
      apart++;
    }
    try (var ctx = context(call)) {
      log.debug("call {} in state {}; handler interrupted", why, was);
    }
    interrupt(call); // last: cancelling its stage may run the handler's own code
    forgetIfSettled(call);
    checkIdle();
  }

  /**
   * A cancelled call whose intent is on disk: interrupted (never run again) if its handler began,
   * for it may have acted; otherwise its intent is dropped, so a re-invoke runs it.
   */
  private void cancelledAfterIntent(CallRecord call) {
    if (call.context.neverStarted()) {
      outbox.dropIntent(call.callId);
    } else {
      outbox.markInterrupted(call.callId);
    }
  }

  private void deadlinePassed(CallRecord call) {
    switch (call.state) {
      case INTENT -> call.deadlinePassed = true; // answered once the intent write returns
      case RUNNING -> {
        call.abandoned = true;
        apart++;
        decide(
            call,
            CallPipeline.deadlineExceeded(elapsedMs(call)),
            InvocationOutcome.DEADLINE_EXCEEDED);
        interrupt(call); // last: cancelling its stage may run the handler's own code
      }
      default -> {} // decided already
    }
  }

  /** Tells the handler its call is off: the flag, its stage cancelled, its thread interrupted. */
  private static void interrupt(CallRecord call) {
    call.context.markCancelled();
    if (call.thread != null) {
      call.thread.interrupt();
    }
  }

  /** A cancelled call leaves once nothing of it runs or is being written any more. */
  private void forgetIfSettled(CallRecord call) {
    if (call.state == CallRecord.State.CANCELLED && call.settled()) {
      calls.remove(call);
    }
  }

  private void checkIdle() {
    if (!noneWaiters.isEmpty()) {
      noneWaiters.removeIf(
          w -> {
            for (CallRecord c : calls.view()) {
              if (w.test().test(c)) {
                return false;
              }
            }
            w.done().complete(null);
            return true;
          });
    }
    if (!draining || idleWaiters.isEmpty() || active > 0 || calls.awaitingAckOnOpenStream()) {
      return;
    }
    idleWaiters.forEach(f -> f.complete(null));
    idleWaiters.clear();
  }

  private void nack(
      CallSink sink,
      Invoke invoke,
      ToolSlots slots,
      InvocationOutcome outcome,
      String code,
      String message) {
    (slots == null ? unknownTool : slots.metrics).count(outcome);
    debug(invoke, "nack {}: {}", code, message);
    sink.sendNack(invoke.callId(), code, message);
  }

  private void nackDraining(CallSink sink, Invoke invoke, ToolSlots slots) {
    nack(
        sink,
        invoke,
        slots,
        InvocationOutcome.NACK_DRAINING,
        DRAINING,
        "worker is draining for shutdown; retry on another worker");
  }

  private long elapsedMs(CallRecord call) {
    return Duration.between(call.admittedAt, now()).toMillis();
  }

  /**
   * The clock's time to the millisecond, which is all a call's times need: the system clock's
   * {@code instant()} is a native call, {@code millis()} an intrinsic, and each call takes two.
   */
  private Instant now() {
    return Instant.ofEpochMilli(clock.millis());
  }

  private static Throwable unwrap(Throwable t) {
    return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
  }

  /** A per-call DEBUG line from the context, with the call's logging context. */
  private static void debug(Invoke invoke, String format, Object... args) {
    if (log.isDebugEnabled()) {
      try (var ctx =
          LogContext.call(
              invoke.callId(), invoke.sessionId(), invoke.tool() + "@" + invoke.version())) {
        log.debug(format, args);
      }
    }
  }

  private static LogContext.Scope context(CallRecord call) {
    return LogContext.call(call.callId, call.sessionId, call.key);
  }
}
