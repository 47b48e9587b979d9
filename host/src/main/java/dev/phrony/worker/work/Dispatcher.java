package dev.phrony.worker.work;

import dev.phrony.worker.call.CallPipeline;
import dev.phrony.worker.ops.ToolMetrics;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.outbox.ResultOutbox;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.time.Scheduler;
import dev.phrony.worker.work.Inbound.Invoke;
import io.grpc.Status;
import io.grpc.SynchronizationContext;
import java.time.Duration;
import java.time.InstantSource;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one owner of every call's state (docs/architecture.md, "the flow of one call"). Each
 * transition of a call, from the stream (invoke, cancel, ack, the stream's end), from its handler's
 * thread (completed), from the outbox (intent or result durable) or from a timer (deadline, slot
 * grace), is a task in one {@link SynchronizationContext}: tasks run one at a time, in order, on
 * the stream's event loop (where every cancel is read first, see {@link #execute}), so there are no
 * locks and no state split between threads. Handler threads and the outbox writer only post what
 * came of their work; they never decide whether to send.
 *
 * <p>Each call is one {@link CallRecord} in the {@link CallTable}, from its invoke to its ack. The
 * parts that share the context: this class admits invokes and drains; {@link SlotWaits} queues
 * invokes that found no slot; {@link Outcomes} takes a started call to its answer ({@link
 * CallStarter} starts handlers); {@link Cancels} ends calls early; {@link StreamEnds} detaches or
 * hands over a stream's calls when it ends; {@link OrphanPolicy} judges held results across streams
 * (protocol.md rules 3 and 9); {@link IdleWaiters} tells when calls are done.
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
  private final SynchronizationContext context;

  /** Handlers past their cancel or deadline: named, and the rule for leaving routing. */
  private final Runaways runaways;

  private volatile int maxRunaway = WorkOptions.DEFAULT_MAX_RUNAWAY;

  /** True on the stream's event loop (where a non-blocking handler may start inline). */
  private final BooleanSupplier onIoThread;

  /** The stream's event loop, where the context runs; null: where a task is posted (tests). */
  private final Executor loop;

  /** The handlers of the first registration (and of any sink that names none). */
  private final HandlerSet initial;

  /**
   * Every set a live registration (or its winding-down calls) may use: for the slot gauges, which
   * read it on a metrics scrape's thread (copy-on-write: it changes only at a reload).
   */
  private final List<HandlerSet> sets = new CopyOnWriteArrayList<>();

  /** One set of meters per key, whichever generation serves it; made in the context. */
  private final Map<String, ToolMetrics> meters = new HashMap<>();

  private final WorkerMetrics metrics;
  private final WireTimings timings;

  // ---- confined to the context ----
  private final CallTable calls = new CallTable();
  private final OrphanPolicy orphans;
  private final SlotWaits slotWaits;
  private final CallStarter starter;
  private final Admission admission;
  private final Outcomes outcomes;
  private final Cancels cancels;
  private final StreamEnds streamEnds;
  private final IdleWaiters idle;

  /** Written in the context, read anywhere ({@link #isDraining}: readiness, the drain). */
  private volatile boolean draining;

  public Dispatcher(
      HandlerCatalog catalog, ResultOutbox outbox, CallPipeline pipeline, Scheduler scheduler) {
    this(catalog, outbox, pipeline, scheduler, WorkerMetrics.NONE, () -> false, null);
  }

  /**
   * With metrics (the meters of every {@code tool@version} are resolved here, once), the test of
   * the thread on which an {@code AsyncToolHandler} may start inline (the stream's I/O thread,
   * where the invoke arrived; anywhere else its calls start on a virtual thread), and {@code loop},
   * that thread's executor: every transition runs there (see {@link #execute}); null runs each
   * where it is posted.
   */
  public Dispatcher(
      HandlerCatalog catalog,
      ResultOutbox outbox,
      CallPipeline pipeline,
      Scheduler scheduler,
      WorkerMetrics metrics,
      BooleanSupplier onIoThread,
      Executor loop) {
    this(catalog, outbox, pipeline, scheduler, metrics, onIoThread, loop, new WireTimings());
  }

  /** With the worker's own {@link WireTimings} (its channel records into them too). */
  public Dispatcher(
      HandlerCatalog catalog,
      ResultOutbox outbox,
      CallPipeline pipeline,
      Scheduler scheduler,
      WorkerMetrics metrics,
      BooleanSupplier onIoThread,
      Executor loop,
      WireTimings timings) {
    this.timings = timings;
    this.outbox = outbox;
    this.onIoThread = onIoThread;
    this.loop = loop;
    InstantSource clock = scheduler.clock();
    this.context =
        new SynchronizationContext(
            (t, e) -> {
              log.error("call state transition failed (a bug; the call may be stuck)", e);
              Thread.UncaughtExceptionHandler process = Thread.getDefaultUncaughtExceptionHandler();
              if (e instanceof Error && process != null) {
                process.uncaughtException(t, e); // in the worker: a core thread's Error ends it
              }
            });
    this.idle = new IdleWaiters(calls, () -> draining);
    this.orphans = new OrphanPolicy(outbox, scheduler, this::execute, calls);
    this.outcomes = new Outcomes(calls, outbox, clock, this::execute, orphans, idle);
    this.starter = new CallStarter(pipeline, clock, onIoThread, this::execute, outcomes::finished);
    outcomes.starter(starter);
    this.admission =
        new Admission(
            calls,
            outbox,
            pipeline,
            scheduler,
            this::execute,
            outcomes,
            () -> draining,
            metrics.unknownTool(),
            this::deadlinePassed,
            idle::check);
    this.slotWaits = admission.slotWaits();
    this.cancels = new Cancels(calls, slotWaits, orphans, outcomes, idle, starter.threads());
    this.runaways = new Runaways(starter.threads(), () -> maxRunaway, calls::apart);
    this.streamEnds = new StreamEnds(calls, slotWaits, orphans, outcomes, idle);
    this.metrics = metrics;
    this.initial = handlerSet(catalog);
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

  /**
   * Runs {@code task} in the context that owns the calls (after what is queued there). Every
   * transition is posted here, from any thread. In the worker the context runs on the stream's
   * event loop only: there the inbound path has already read every cancel that came before, so no
   * decision to send is made on a thread that cannot see one (a handler's thread or the outbox
   * writer draining the context would decide ahead of a cancel the I/O thread holds). Tests without
   * a loop run it where it is posted.
   */
  void execute(Runnable task) {
    if (loop == null || onIoThread.getAsBoolean()) {
      context.execute(task);
    } else {
      loop.execute(() -> context.execute(task));
    }
  }

  private void deadlinePassed(CallRecord call) {
    cancels.deadlinePassed(call);
  }

  // ---- from the stream ----

  void onInvoke(Invoke invoke, CallSink sink) {
    HandlerSet set = sink.handlers();
    execute(() -> admission.admit(invoke, sink, set == null ? initial : set));
  }

  void onCancel(String callId, CallSink sink) {
    long posted = System.nanoTime();
    execute(
        () -> {
          timings.record(WireTimings.Interval.ON_CANCEL_TO_OWNER, System.nanoTime() - posted);
          cancels.cancelled(callId, sink);
          sink.cancelTaken(callId); // from now on the call's state keeps anything from being sent
        });
  }

  void onResultAck(String callId) {
    execute(
        () -> {
          orphans.acked(callId);
          idle.check();
        });
  }

  /** {@code sink} is registered: results of older streams are judged against its window. */
  void onRegistered(CallSink sink, Set<String> advertised, Duration ttl) {
    execute(() -> orphans.registered(sink, advertised, ttl));
  }

  // ---- a stream's end, in the context (the registrations decide which) ----

  /** In the context: see {@link StreamEnds#detach}. */
  void detach(CallSink sink, Status status) {
    context.throwIfNotInThisSynchronizationContext();
    streamEnds.detach(sink, status);
  }

  /** In the context: see {@link StreamEnds#handOver}. */
  Set<String> handOver(CallSink from, CallSink to, Status status) {
    context.throwIfNotInThisSynchronizationContext();
    return streamEnds.handOver(from, to, status);
  }

  /** {@code rescue} is registered: the handed-over results it has not acked go out on it. */
  void onRescueRegistered(CallSink rescue) {
    execute(() -> streamEnds.rescueRegistered(rescue));
  }

  // ---- draining ----

  /** Stops taking work: every later invoke is nacked {@code draining}. */
  void startDraining() {
    execute(
        () -> {
          draining = true;
          for (CallRecord c : calls.all()) {
            if (c.state() == CallRecord.State.WAITING && slotWaits.stop(c)) {
              calls.remove(c);
              admission.nackDraining(c.owner(), c.invoke, c.slots);
            }
          }
          idle.check();
        });
  }

  /**
   * Completes once no call is running or being held and no result sent on an open stream waits for
   * its ack (checked while draining).
   */
  CompletableFuture<Void> whenIdle() {
    CompletableFuture<Void> f = new CompletableFuture<>();
    execute(() -> idle.whenIdle(f));
    return f;
  }

  /** Cancels every call still running (end of a drain): nothing more is sent for them. */
  void cancelAll() {
    execute(() -> cancels.all("the drain timeout passed"));
  }

  /**
   * Cancels {@code sink}'s calls that still run or wait (a stream that outlived the drain timeout
   * while winding down): as at the end of a drain, nothing more is sent for them, and what they
   * still produce is kept as orphaned.
   */
  void cancelOn(CallSink sink, String why) {
    execute(() -> cancels.on(sink, why, c -> admission.nackDraining(c.owner(), c.invoke, c.slots)));
  }

  /**
   * Calls the runtime should be told about at register: running ones and held results, except those
   * of a stream that is still open (an older generation's, or a rescue): listed, they would move to
   * the registering id, and their answers on their own stream would then be refused.
   */
  Set<String> inFlightIds() {
    context.throwIfNotInThisSynchronizationContext();
    Set<String> ids = new HashSet<>();
    Set<String> onOpenStreams = new HashSet<>();
    for (CallRecord c : calls.view()) {
      if (c.owner() != null && c.owner().live()) {
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
    execute(() -> set.rebind(next));
  }

  /**
   * Completes once nothing of {@code sink}'s calls is left on it: none waits, runs or is being
   * held, and every result sent on it (or handed to it) was acked. Then the stream may close
   * without making any call indeterminate.
   */
  CompletableFuture<Void> whenIdleOn(CallSink sink) {
    return whenNone(
        c ->
            c.owner() == sink
                && (c.state() == CallRecord.State.WAITING
                    || c.running()
                    || c.state() == CallRecord.State.SENT
                    || c.state() == CallRecord.State.HANDED_OVER));
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
    execute(() -> idle.whenNone(test, f));
    return f;
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
    return calls.running();
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
    return calls.apart();
  }

  /** The operator's bound on runaway handlers ({@code --max-runaway-handlers}). */
  void maxRunaway(int max) {
    maxRunaway = max;
  }

  Runaways runaways() {
    return runaways;
  }

  /** True while runaway handlers hold the worker out of routing (see {@link Runaways}). */
  boolean holdsRouting() {
    return runaways.holding();
  }
}
