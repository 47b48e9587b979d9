package dev.phrony.worker.work;

import dev.phrony.runtime.v1.WorkInvoke;
import dev.phrony.worker.api.AsyncToolHandler;
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
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadFactory;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one owner of every call's state (design.md "the flow of one call"). Each transition of a
 * call, from the stream (invoke, cancel, ack, the stream's end), from its handler's thread
 * (completed), from the outbox (intent or result durable) or from a timer (deadline), is a task
 * in one {@link SynchronizationContext}: tasks run one at a time, in order, on the stream's event
 * loop (where every cancel is read first, see {@link #post}), so there are no locks and no state
 * split between threads. Handler threads and the outbox writer only post what came of their work;
 * they never decide whether to send.
 *
 * <p>Outlives streams: a call started on one stream may finish after a reconnect; its result is
 * then held for the runtime to ask for again ({@link OrphanPolicy}). Slots are counted as the
 * runtime counts them (protocol.md rule 6): a {@link ToolSlots.Permit} taken by the invoke and
 * released by our result or nack, by the runtime's cancel, or by the end of the stream (the
 * runtime then drops the registration and its counts).
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
   * How long an invoke that found every slot taken waits for the cancel that made room for it
   * (see {@link ToolSlots#waiting}) before it is nacked {@code capacity_exhausted}.
   */
  static final Duration SLOT_GRACE = Duration.ofSeconds(1);

  /** How long a handleAsync may hold the I/O thread before each heartbeat tick reports it. */
  static final long STALLED_START_MS = 1_000;

  /** An invoke waiting for a slot of its tool, on the stream it came on. */
  static final class Waiting {
    final Invoke invoke;
    final CallSink sink;
    final ToolSlots slots;
    Scheduler.Handle grace = Scheduler.NONE;

    Waiting(Invoke invoke, CallSink sink, ToolSlots slots) {
      this.invoke = invoke;
      this.sink = sink;
      this.slots = slots;
    }
  }

  /** Makes the virtual thread of each call (thread-safe, unlike a builder). */
  private static final ThreadFactory CALL_THREADS = Thread.ofVirtual().factory();

  private final ResultOutbox outbox;
  private final CallPipeline pipeline;
  private final Scheduler scheduler;
  private final InstantSource clock;
  private final SynchronizationContext context;
  private final OrphanPolicy orphans;
  /** True on the thread where a non-blocking handler may start inline: the stream's I/O thread. */
  private final BooleanSupplier onIoThread;
  /** The stream's event loop, where the context runs; null: where a task is posted (tests). */
  private final Executor loop;
  /** By {@code tool@version}; never changes after construction. */
  private final Map<String, ToolSlots> tools;
  /** The same slots by tool, then version: an invoke finds its own without building its key. */
  private final Map<String, Map<String, ToolSlots>> byTool;
  private final ToolMetrics unknownTool;
  private final WireTimings timings = new WireTimings();

  // ---- confined to the context ----
  private final HashMap<String, Call> calls = new HashMap<>();
  /** Invokes waiting for a slot, by call id (also queued in their {@link ToolSlots#waiting}). */
  private final HashMap<String, Waiting> waiting = new HashMap<>();
  private CallSink current;
  private final List<CompletableFuture<Void>> idleWaiters = new ArrayList<>();

  // ---- written around an inline start, read by the heartbeat's timer ----
  /** The call whose handleAsync runs on the I/O thread now (null: none), since when, where. */
  private volatile Call startingInline;
  private volatile long startingInlineSinceMs;
  private volatile Thread ioThread;

  // ---- written in the context, read anywhere (metrics, readiness, tests) ----
  private volatile int active;
  private volatile int apart;
  private volatile boolean draining;

  public Dispatcher(HandlerCatalog catalog, ResultOutbox outbox, CallPipeline pipeline,
      Scheduler scheduler) {
    this(catalog, outbox, pipeline, scheduler, WorkerMetrics.NONE, () -> false, null);
  }

  /**
   * With metrics (the meters of every {@code tool@version} are resolved here, once) and the
   * test of the thread on which an {@link AsyncToolHandler} may start inline: the stream's I/O
   * thread, where the invoke arrived. Anywhere else (an outbox thread that made an intent
   * durable, a handler's thread that drains the context) its calls start on a virtual thread.
   * {@code loop} is that thread's executor: every transition runs there (see {@link #post}); null
   * runs each where it is posted.
   */
  public Dispatcher(HandlerCatalog catalog, ResultOutbox outbox, CallPipeline pipeline,
      Scheduler scheduler, WorkerMetrics metrics, BooleanSupplier onIoThread, Executor loop) {
    this.outbox = outbox;
    this.onIoThread = onIoThread;
    this.loop = loop;
    this.pipeline = pipeline;
    this.scheduler = scheduler;
    this.clock = scheduler.clock();
    this.context = new SynchronizationContext((t, e) -> {
      log.error("call state transition failed (a bug; the call may be stuck)", e);
      Thread.UncaughtExceptionHandler process = Thread.getDefaultUncaughtExceptionHandler();
      if (e instanceof Error && process != null) {
        process.uncaughtException(t, e); // in the worker: a core thread's Error ends it
      }
    });
    this.orphans = new OrphanPolicy(outbox, scheduler, this::post);
    Map<String, ToolSlots> t = new HashMap<>();
    for (HandlerCatalog.Entry e : catalog.entries()) {
      int max = slotsOf(e);
      t.put(e.key(), new ToolSlots(e, max, s -> metrics.tool(s.key, max, s::busy)));
    }
    this.tools = Map.copyOf(t);
    tools.values().forEach(s -> s.onFreed(() -> context.execute(() -> slotFreed(s))));
    this.byTool = Map.copyOf(tools.values().stream().collect(Collectors.groupingBy(
        s -> s.entry.descriptor().tool(),
        Collectors.toUnmodifiableMap(s -> s.entry.descriptor().version(), s -> s))));
    this.unknownTool = metrics.unknownTool();
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

  /** The same, from the generated message. */
  void onInvoke(WorkInvoke invoke, CallSink sink) {
    onInvoke(Invoke.of(invoke), sink);
  }

  void onCancel(String callId, CallSink sink) {
    long posted = System.nanoTime();
    post(() -> {
      timings.record(WireTimings.Interval.ON_CANCEL_TO_OWNER, System.nanoTime() - posted);
      cancelled(callId, sink);
      sink.cancelTaken(callId); // from now on the call's state keeps anything from being sent
    });
  }

  void onResultAck(String callId) {
    post(() -> {
      orphans.acked(callId);
      checkIdle();
    });
  }

  /** {@code sink} is registered: results of older streams are judged against its window. */
  void onRegistered(CallSink sink, Set<String> advertised, Duration ttl) {
    post(() -> {
      current = sink;
      orphans.registered(sink, advertised, ttl);
    });
  }

  /** The stream {@code sink} ended: its calls run on apart and its slots are gone. */
  void onStreamEnded(CallSink sink, Status status) {
    post(() -> {
      if (current == sink) {
        current = null;
      }
      List.copyOf(waiting.values()).forEach(w -> {
        if (w.sink == sink) {
          stopWaiting(w); // the runtime made it indeterminate with its stream
        }
      });
      for (Call c : calls.values()) {
        if (c.owner == sink) {
          c.owner = null;
          c.permit.release();
        }
      }
      orphans.streamEnded(sink, status);
      checkIdle();
    });
  }

  /** Stops taking work: every later invoke is nacked {@code draining}. */
  void startDraining() {
    post(() -> {
      draining = true;
      List.copyOf(waiting.values()).forEach(w -> {
        stopWaiting(w);
        nackDraining(w.sink, w.invoke, w.slots);
      });
      checkIdle();
    });
  }

  /**
   * Completes once no call is running or being held and no result sent on the current stream
   * waits for its ack (checked while draining).
   */
  CompletableFuture<Void> whenIdle() {
    CompletableFuture<Void> f = new CompletableFuture<>();
    post(() -> {
      idleWaiters.add(f);
      checkIdle();
    });
    return f;
  }

  /** Cancels every call still running (end of a drain): nothing more is sent for them. */
  void cancelAll() {
    post(() -> List.copyOf(calls.values()).forEach(c -> {
      if (c.state != Call.State.CANCELLED) {
        cancel(c, "the drain timeout passed");
      }
    }));
  }

  /** Calls the runtime should be told about at register: running ones and held results. */
  Set<String> inFlightIds() {
    context.throwIfNotInThisSynchronizationContext();
    Set<String> ids = new HashSet<>();
    calls.forEach((id, c) -> {
      if (c.state != Call.State.CANCELLED) {
        ids.add(id);
      }
    });
    ids.addAll(outbox.pendingIds());
    ids.addAll(outbox.interruptedIds());
    return ids;
  }

  // ---- views, from any thread ----

  /** An asynchronous handler's start that holds the I/O thread: whose, how long, where. */
  record StalledStart(String callId, String key, long heldMs, List<StackTraceElement> where) {}

  /**
   * From the heartbeat's timer, whose beats such a start holds back: a handleAsync that has
   * kept the stream's I/O thread over a second is logged with where it is (no message is read
   * or sent until it returns, so the lease may run out), and returned.
   */
  Optional<StalledStart> reportStalledStart() {
    Call call = startingInline;
    long heldMs = clock.millis() - startingInlineSinceMs;
    Thread thread = ioThread;
    if (call == null || heldMs < STALLED_START_MS || thread == null) {
      return Optional.empty();
    }
    StalledStart stall = new StalledStart(call.callId, call.key(), heldMs,
        List.of(thread.getStackTrace()));
    Exception where = new Exception("where the I/O thread is: " + thread.getName());
    where.setStackTrace(stall.where().toArray(StackTraceElement[]::new));
    try (var ctx = context(call)) {
      log.warn("handler {} has kept the Work stream's thread {} ms in handleAsync: no message is"
          + " read or sent, heartbeats included, until it returns", stall.key(), heldMs, where);
    }
    return Optional.of(stall);
  }

  /** Calls admitted whose outcome is not held yet (cancelled ones excluded). */
  int runningCount() {
    return active;
  }

  /** Where cancels and results spend their time between the socket and the owner. */
  public WireTimings timings() {
    return timings;
  }

  /** Slots in use for {@code key}. */
  public int busy(String key) {
    ToolSlots t = tools.get(key);
    return t == null ? 0 : t.busy();
  }

  /** True once draining started: every new invoke is nacked. */
  public boolean draining() {
    return draining;
  }

  /** Handlers whose call was cancelled (or outlived its deadline) and that still run. */
  public int runningApart() {
    return apart;
  }

  // ---- transitions (all in the context) ----

  private void admit(Invoke invoke, CallSink sink) {
    admit(invoke, sink, false);
  }

  /** {@code waited}: it waited for a slot and is first in line, so it may take a free one. */
  private void admit(Invoke invoke, CallSink sink, boolean waited) {
    String callId = invoke.callId();
    Call existing = calls.get(callId);
    if (existing != null) {
      invokedAgain(existing, invoke, sink);
      return;
    }
    Optional<HeldResult> held = outbox.find(callId);
    if (held.isPresent()) {
      // Rule 5: the handler ran; the runtime invoked it again, so it expects the held result.
      debug(invoke, "invoke of a held call: resending its result");
      if (outbox.isOrphaned(callId)) {
        outbox.holdAsync(held.get()); // no longer orphaned: the runtime asks for it
      }
      send(sink, held.get());
      return;
    }
    ToolSlots slots = byTool.getOrDefault(invoke.tool(), Map.of()).get(invoke.version());
    if (outbox.wasInterrupted(callId)) {
      // A previous attempt may have acted before the worker stopped: never run it twice.
      nack(sink, invoke, slots, InvocationOutcome.NACK_PREVIOUS_ATTEMPT_INTERRUPTED,
          PREVIOUS_ATTEMPT_INTERRUPTED, "a previous attempt of this call was interrupted and may"
              + " have acted; see 'phrony-worker outbox show " + callId + "'");
      return;
    }
    if (draining) {
      nackDraining(sink, invoke, slots);
      return;
    }
    if (slots == null) {
      nack(sink, invoke, null, InvocationOutcome.NACK_UNKNOWN_TOOL, UNKNOWN_TOOL,
          "this worker serves no handler for " + invoke.tool() + "@" + invoke.version());
      return;
    }
    // Invokes that came first take slots first: none overtakes one waiting for a slot.
    ToolSlots.Permit permit = waited || slots.waiting.isEmpty() ? slots.tryAcquire() : null;
    if (permit == null) {
      waitForSlot(invoke, sink, slots);
      return;
    }
    long deadline = deadlineOf(invoke, slots);
    CallContext ctx = new CallContext(callId, invoke.sessionId(), invoke.agentVersionId(),
        invoke.turn(), invoke.tool(), invoke.version(), invoke.sideEffectClass(),
        deadline, invoke.argsBuffer(), pipeline.codec());
    Call call = new Call(ctx, slots, sink, permit, now(),
        outbox.needsIntent(slots.sideEffectClass));
    calls.put(callId, call);
    active++;
    debug(invoke, "invoke admitted");
    if (deadline > 0) {
      long leftMs = deadline - clock.millis();
      if (leftMs <= 0) { // passed already: the handler is not started at all
        decide(call, CallPipeline.deadlineExceeded(0), InvocationOutcome.DEADLINE_EXCEEDED,
            false);
        return;
      }
      call.deadline = scheduler.schedule(() -> post(() -> deadlinePassed(call)),
          Duration.ofMillis(leftMs));
    }
    if (call.needsIntent) {
      recordIntent(call);
    } else {
      start(call);
    }
  }

  /**
   * When the call must end, epoch ms (0: never): the session's deadline, or the handler's
   * bound from now (an operator's {@code deadline} setting), whichever comes first.
   */
  private long deadlineOf(Invoke invoke, ToolSlots slots) {
    long session = invoke.deadlineUnixMs();
    if (slots.maxRunTimeMs <= 0) {
      return session;
    }
    long bound = clock.millis() + slots.maxRunTimeMs;
    return session > 0 ? Math.min(session, bound) : bound;
  }

  /**
   * Every slot is taken: the runtime freed one by a cancel it has not sent yet, or it counts
   * otherwise. The invoke waits, in order, for a slot given back within {@link #SLOT_GRACE};
   * then it is nacked (rule 6).
   */
  private void waitForSlot(Invoke invoke, CallSink sink, ToolSlots slots) {
    Waiting earlier = waiting.get(invoke.callId());
    if (earlier != null) {
      stopWaiting(earlier); // invoked again (its stream was replaced): it waits as this one
    }
    Waiting w = new Waiting(invoke, sink, slots);
    w.grace = scheduler.schedule(() -> post(() -> graceOver(w)), SLOT_GRACE);
    slots.waiting.add(w);
    waiting.put(invoke.callId(), w);
    debug(invoke, "every slot taken: waiting for one");
  }

  private void graceOver(Waiting w) {
    if (!stopWaiting(w)) {
      return;
    }
    nack(w.sink, w.invoke, w.slots, InvocationOutcome.NACK_CAPACITY_EXHAUSTED,
        CAPACITY_EXHAUSTED, w.slots.key + " is running its maximum of " + w.slots.max
            + " calls on this worker");
  }

  /** Takes {@code w} out of waiting; false if it was no longer there. */
  private boolean stopWaiting(Waiting w) {
    waiting.remove(w.invoke.callId(), w);
    w.grace.cancel();
    return w.slots.waiting.remove(w); // the queue says what waits; the map only finds it
  }

  /** A slot of {@code slots} was given back: the oldest waiting invokes are admitted. */
  private void slotFreed(ToolSlots slots) {
    Waiting w;
    while (slots.busy() < slots.max && (w = slots.waiting.peek()) != null) {
      stopWaiting(w);
      admit(w.invoke, w.sink, true);
    }
  }

  /** Rule 5: an invoke for a call still here attaches to it; the handler runs once. */
  private void invokedAgain(Call call, Invoke invoke, CallSink sink) {
    if (call.state == Call.State.CANCELLED && call.held == null) {
      nack(sink, invoke, call.slots, InvocationOutcome.NACK_PREVIOUS_ATTEMPT_INTERRUPTED,
          PREVIOUS_ATTEMPT_INTERRUPTED, "this call was cancelled while its handler ran, which may"
              + " have acted; it is not run a second time");
      return;
    }
    if (call.state == Call.State.CANCELLED) {
      call.state = Call.State.HOLDING; // its outcome is being held: the runtime now wants it
      active++;
    }
    call.owner = sink;
    if (call.permit.released()) {
      call.permit = call.slots.acquire(); // the runtime counts this invoke in a slot
    }
    debug(invoke, "invoke of a running call attached to this stream");
  }

  private void recordIntent(Call call) {
    call.state = Call.State.INTENT;
    call.intentPending = true;
    CompletableFuture<Void> written;
    try {
      written = outbox.recordIntentAsync(new IntentRecord(call.callId, call.sessionId,
          call.key(), call.slots.sideEffectClass, call.admittedAt));
    } catch (RuntimeException e) {
      written = CompletableFuture.failedFuture(e);
    }
    written.whenComplete((v, e) -> post(() -> intentDone(call, e)));
  }

  private void intentDone(Call call, Throwable failure) {
    call.intentPending = false;
    call.intentWritten = failure == null;
    if (call.state == Call.State.CANCELLED) {
      if (call.intentWritten) {
        outbox.markInterrupted(call.callId); // conservative: it was to run, never run it again
      }
      forgetIfSettled(call);
      return;
    }
    if (failure != null) {
      Throwable cause = unwrap(failure);
      try (var ctx = context(call)) {
        log.error("intent could not be made durable ({}); not running the call", cause.toString());
      }
      decide(call, CallOutcome.error(INTENT_NOT_DURABLE, "the worker could not record its intent"
          + " durably, so it did not run the call: " + DiskErrors.reason(cause)),
          InvocationOutcome.TOOL_ERROR, false);
      return;
    }
    if (call.deadlinePassed) {
      decide(call, CallPipeline.deadlineExceeded(elapsedMs(call)),
          InvocationOutcome.DEADLINE_EXCEEDED, false);
      return;
    }
    start(call);
  }

  private void start(Call call) {
    call.state = Call.State.RUNNING;
    call.handlerAlive = true;
    if (call.slots.inline() && onIoThread.getAsBoolean()) {
      runInline(call);
      return;
    }
    Thread thread = CALL_THREADS.newThread(() -> runHandler(call));
    thread.setName("call-" + call.callId); // a thread dump names the call
    call.thread = thread;
    thread.start();
  }

  /**
   * In the context, on the I/O thread: checks the arguments and starts an asynchronous handler
   * right here, with no thread of its own and no hand-off. A handler that kept the thread longer
   * than it promised is moved off it for its later calls.
   */
  private void runInline(Call call) {
    try (var ctx = context(call)) {
      CallPipeline.Refusal refusal = pipeline.checkArgs(call.context.rawArgs(),
          call.slots.argsCheck);
      if (refusal != null) {
        finished(call, null, refusal, 0);
        return;
      }
      long t0 = System.nanoTime();
      long startedMs = clock.millis();
      ioThread = Thread.currentThread();
      startingInlineSinceMs = startedMs;
      startingInline = call;
      CompletableFuture<CallOutcome> outcome = pipeline.start(call.slots.async,
          call.slots.entry.classLoader(), call.context);
      startingInline = null;
      long heldMs = clock.millis() - startedMs;
      if (call.slots.started(heldMs)) {
        log.warn("handler {} kept the Work stream's thread over {} ms in handleAsync {} times in"
            + " a row (this time {} ms): its calls now run on threads of their own. An"
            + " AsyncToolHandler must not block; implement ToolHandler if it does", call.key(),
            AsyncToolHandler.BLOCKING_LIMIT_MS, ToolSlots.SLOW_STARTS_TO_MOVE, heldMs);
      } else if (heldMs > AsyncToolHandler.BLOCKING_LIMIT_MS) {
        log.info("handler {} kept the Work stream's thread {} ms in handleAsync (at most {} ms"
            + " is expected)", call.key(), heldMs, AsyncToolHandler.BLOCKING_LIMIT_MS);
      }
      if (outcome.isDone()) {
        finished(call, outcome.join(), null, Math.max(1, System.nanoTime() - t0));
      } else {
        finishWhenDone(call, outcome, t0);
      }
    }
  }

  /** Posts {@code call}'s "finished" event to the context once its handler's stage is done. */
  private void finishWhenDone(Call call, CompletableFuture<CallOutcome> outcome, long t0) {
    outcome.thenAccept(o -> post(
        () -> finished(call, o, null, Math.max(1, System.nanoTime() - t0))));
  }

  /** On the call's own thread: the pipeline, then one "finished" event for the owner. */
  private void runHandler(Call call) {
    try (var ctx = context(call)) {
      CallPipeline.Refusal refusal = pipeline.checkArgs(call.context.rawArgs(),
          call.slots.argsCheck);
      if (refusal != null) {
        post(() -> finished(call, null, refusal, 0));
        return;
      }
      if (call.context.isCancelled()) {
        post(() -> finished(call, null, null, 0)); // cancelled before it started
        return;
      }
      log.debug("handler started");
      long t0 = System.nanoTime();
      if (call.slots.async != null) { // moved off the I/O thread: started here, finished later
        finishWhenDone(call, pipeline.start(call.slots.async, call.slots.entry.classLoader(),
            call.context), t0);
        return;
      }
      CallOutcome outcome = pipeline.run(call.slots.entry.handler(),
          call.slots.entry.classLoader(), call.context);
      long ran = System.nanoTime() - t0;
      post(() -> finished(call, outcome, null, ran));
    }
  }

  private void finished(Call call, CallOutcome outcome, CallPipeline.Refusal refusal,
      long ranNanos) {
    call.handlerAlive = false;
    if (ranNanos > 0) {
      call.slots.metrics.handlerTime(Duration.ofNanos(ranNanos));
    }
    if (call.abandoned) {
      apart--;
      try (var ctx = context(call)) {
        log.info("handler of a {} call finished after {} ms; its outcome is dropped",
            call.state == Call.State.CANCELLED ? "cancelled" : "timed-out", elapsedMs(call));
      }
      forgetIfSettled(call);
      return;
    }
    if (refusal != null && refusal.nack()) {
      call.slots.metrics.count(InvocationOutcome.NACK_INVALID_ARGS);
      if (call.intentWritten) {
        outbox.dropIntent(call.callId); // the handler never started
      }
      end(call);
      call.permit.release();
      if (call.owner != null && call.owner.live()) {
        log.debug("nack {}: {}", refusal.code(), refusal.message());
        call.owner.sendNack(call.callId, refusal.code(), refusal.message());
      }
      return;
    }
    if (refusal != null) {
      decide(call, CallOutcome.error(refusal.code(), refusal.message()),
          InvocationOutcome.TOOL_ERROR, false);
      return;
    }
    if (outcome == null) { // cancelled before it started: the cancel decided already
      forgetIfSettled(call);
      return;
    }
    decide(call, outcome, outcome instanceof CallOutcome.Payload ? InvocationOutcome.RESULT
        : InvocationOutcome.TOOL_ERROR);
  }

  /** The outcome of a handler that ran: hold it (durably if the outbox does), then send it. */
  private void decide(Call call, CallOutcome outcome, InvocationOutcome counted) {
    decide(call, outcome, counted, true);
  }

  /**
   * The outcome stands: hold it, then send it. One the handler never produced (it did not run)
   * is held in memory only: a second run after a crash could not repeat an effect, and it must
   * not wait for a disk that refuses writes.
   */
  private void decide(Call call, CallOutcome outcome, InvocationOutcome counted,
      boolean handlerRan) {
    call.deadline.cancel();
    call.slots.metrics.count(counted);
    HeldResult held = new HeldResult(call.callId, call.sessionId, call.key(),
        call.slots.sideEffectClass, now(), outcome);
    call.state = Call.State.HOLDING;
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

  private void held(Call call, Throwable failure) {
    call.holdPending = false;
    if (failure != null) {
      try (var ctx = context(call)) {
        log.error("result could not be held: {}", unwrap(failure).toString());
      }
    }
    if (call.state == Call.State.CANCELLED) {
      // Race 1: the cancel came while the result was being made durable. The runtime has
      // forgotten the call, so the result must not go out; it is kept for an operator.
      outbox.markOrphaned(call.callId);
      try (var ctx = context(call)) {
        log.info("call was cancelled while its result was being held; kept as orphaned");
      }
      forgetIfSettled(call);
      return;
    }
    end(call);
    CallSink owner = call.owner;
    if (owner != null && owner.live()) {
      call.permit.release();
      send(owner, call.held);
    } else {
      // Rule 3: its stream is gone; kept for in_flight, never sent on another stream.
      orphans.heldWithoutStream(call.callId);
    }
    checkIdle();
  }

  private void send(CallSink sink, HeldResult result) {
    if (sink.sendResult(result)) {
      orphans.sent(result.callId(), sink);
    }
  }

  /** Rule 4: interrupt, free the slot, and send nothing for this call, ever. */
  private void cancelled(String callId, CallSink sink) {
    Waiting w = waiting.get(callId);
    if (w != null) { // cancelled before a slot came: it never started, nothing is sent
      stopWaiting(w);
      w.slots.metrics.count(InvocationOutcome.CANCELLED);
      return;
    }
    Call call = calls.get(callId);
    if (call == null) {
      orphans.cancelledAfterFinish(callId, sink);
      return;
    }
    if (call.state != Call.State.CANCELLED) {
      cancel(call, "cancelled by the runtime");
    }
  }

  private void cancel(Call call, String why) {
    Call.State was = call.state;
    call.state = Call.State.CANCELLED;
    call.permit.release();
    call.deadline.cancel();
    active--;
    if (was != Call.State.HOLDING) { // a held outcome was counted, and it may have acted
      call.slots.metrics.count(InvocationOutcome.CANCELLED);
      if (call.intentWritten) {
        outbox.markInterrupted(call.callId); // it may have acted: never run it again
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

  private void deadlinePassed(Call call) {
    switch (call.state) {
      case INTENT -> call.deadlinePassed = true; // answered once the intent write returns
      case RUNNING -> {
        call.abandoned = true;
        apart++;
        decide(call, CallPipeline.deadlineExceeded(elapsedMs(call)),
            InvocationOutcome.DEADLINE_EXCEEDED);
        interrupt(call); // last: cancelling its stage may run the handler's own code
      }
      default -> { } // decided already
    }
  }

  /** Tells the handler its call is off: the flag, its stage cancelled, its thread interrupted. */
  private static void interrupt(Call call) {
    call.context.markCancelled();
    if (call.thread != null) {
      call.thread.interrupt();
    }
  }

  /** The outcome is held (or the call refused): it no longer counts as running. */
  private void end(Call call) {
    call.deadline.cancel();
    if (calls.get(call.callId) == call) {
      calls.remove(call.callId);
    }
    active--;
  }

  /** A cancelled call leaves once nothing of it runs or is being written any more. */
  private void forgetIfSettled(Call call) {
    if (call.state == Call.State.CANCELLED && call.settled() && calls.get(call.callId) == call) {
      calls.remove(call.callId);
    }
  }

  private void checkIdle() {
    if (!draining || idleWaiters.isEmpty() || active > 0 || orphans.awaitingAckOn(current)) {
      return;
    }
    idleWaiters.forEach(f -> f.complete(null));
    idleWaiters.clear();
  }

  private void nack(CallSink sink, Invoke invoke, ToolSlots slots, InvocationOutcome outcome,
      String code, String message) {
    (slots == null ? unknownTool : slots.metrics).count(outcome);
    debug(invoke, "nack {}: {}", code, message);
    sink.sendNack(invoke.callId(), code, message);
  }

  private void nackDraining(CallSink sink, Invoke invoke, ToolSlots slots) {
    nack(sink, invoke, slots, InvocationOutcome.NACK_DRAINING, DRAINING,
        "worker is draining for shutdown; retry on another worker");
  }

  private long elapsedMs(Call call) {
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
      try (var ctx = LogContext.call(invoke.callId(), invoke.sessionId(),
          invoke.tool() + "@" + invoke.version())) {
        log.debug(format, args);
      }
    }
  }

  private static LogContext.Scope context(Call call) {
    return LogContext.call(call.callId, call.sessionId, call.key());
  }
}
