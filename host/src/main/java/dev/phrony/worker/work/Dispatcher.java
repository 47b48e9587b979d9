package dev.phrony.worker.work;

import dev.phrony.worker.call.JsonCodec;
import com.fasterxml.jackson.core.JsonProcessingException;
import dev.phrony.runtime.v1.WorkInvoke;
import dev.phrony.worker.api.ToolException;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.ops.InvocationOutcome;
import dev.phrony.worker.ops.LogContext;
import dev.phrony.worker.ops.ToolMetrics;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.outbox.HeldResult;
import dev.phrony.worker.outbox.IntentRecord;
import dev.phrony.worker.outbox.ResultOutbox;
import dev.phrony.worker.call.ContextClassLoader;
import dev.phrony.worker.plugin.HandlerCatalog;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Admits invokes, runs handlers, and routes their outcomes (design.md "the flow of one call").
 * Outlives streams: a call started on one stream may finish after a reconnect.
 *
 * <p>Owns the running calls and the slot counts. Slots are counted as the runtime counts them
 * (protocol.md rule 6): taken by an invoke, freed when our result or nack is handed to the
 * stream, by the runtime's cancel, or when the stream ends (the runtime then drops the
 * registration and its counts). A cancelled handler that ignores interruption keeps running
 * apart, without a slot, and its result is dropped.
 */
public final class Dispatcher {
  private static final Logger log = LoggerFactory.getLogger(Dispatcher.class);

  /** Nack codes (rule 6) and error codes this host produces. */
  static final String UNKNOWN_TOOL = "unknown_tool";
  static final String CAPACITY_EXHAUSTED = "capacity_exhausted";
  static final String INVALID_ARGS = "invalid_args";
  static final String DRAINING = "draining";
  static final String PREVIOUS_ATTEMPT_INTERRUPTED = "previous_attempt_interrupted";
  static final String INTENT_NOT_DURABLE = "intent_not_durable";
  static final String INTERNAL = "internal";
  static final String DEADLINE_EXCEEDED = "deadline_exceeded";
  static final String RESULT_TOO_LARGE = "result_too_large";

  /** Makes the virtual thread of each call (thread-safe, unlike a builder). */
  private static final ThreadFactory CALL_THREADS = Thread.ofVirtual().factory();

  private final ResultOutbox outbox;
  private final JsonCodec codec;
  private final int maxResultBytes;
  private final InstantSource clock;
  private final ScheduledExecutorService timers;

  private final ConcurrentHashMap<String, Invocation> running = new ConcurrentHashMap<>();
  /** By {@code tool@version}; never changes after construction. */
  private final Map<String, ToolSlots> tools;
  /** The same slots by tool, then version: an invoke finds its own without building its key. */
  private final Map<String, Map<String, ToolSlots>> byTool;
  private final ToolMetrics unknownTool;
  private final AtomicInteger apart = new AtomicInteger();
  private volatile boolean draining;
  private volatile CallSink current;

  public Dispatcher(HandlerCatalog catalog, ResultOutbox outbox, JsonCodec codec,
      int maxResultBytes, InstantSource clock, ScheduledExecutorService timers) {
    this(catalog, outbox, codec, maxResultBytes, clock, timers, WorkerMetrics.NONE);
  }

  /** With metrics: the meters of every {@code tool@version} are resolved here, once. */
  public Dispatcher(HandlerCatalog catalog, ResultOutbox outbox, JsonCodec codec,
      int maxResultBytes, InstantSource clock, ScheduledExecutorService timers,
      WorkerMetrics metrics) {
    this.outbox = outbox;
    this.codec = codec;
    this.maxResultBytes = maxResultBytes;
    this.clock = clock;
    this.timers = timers;
    Map<String, ToolSlots> t = new HashMap<>();
    for (HandlerCatalog.Entry e : catalog.entries()) {
      AtomicInteger busy = new AtomicInteger();
      int max = slotsOf(e);
      t.put(e.key(), new ToolSlots(e, max, busy, metrics.tool(e.key(), max, busy::get)));
    }
    this.tools = Map.copyOf(t);
    this.byTool = Map.copyOf(tools.values().stream().collect(Collectors.groupingBy(
        s -> s.entry.descriptor().tool(),
        Collectors.toUnmodifiableMap(s -> s.entry.descriptor().version(), s -> s))));
    this.unknownTool = metrics.unknownTool();
  }

  /** Largest number of calls the runtime may give a key at once: its advertised concurrency. */
  static int slotsOf(HandlerCatalog.Entry e) {
    return Math.max(1, e.descriptor().maxConcurrency());
  }

  // ---- from the stream (the channel's I/O thread: nothing here may block) ----

  /** The stream that is registered now; results of older streams are judged against it. */
  void attachSession(CallSink sink) {
    current = sink;
  }

  void onInvoke(WorkInvoke invoke, CallSink sink) {
    String callId = invoke.getCallId();
    Invocation existing = running.get(callId);
    if (existing != null && existing.attach(sink)) {
      // Rule 5: the handler runs once; this stream now gets its result.
      if (existing.holdSlot()) {
        existing.slots().busy.incrementAndGet();
      }
      debug(invoke, "invoke of running call attached to the current stream");
      return;
    }
    Optional<HeldResult> held = outbox.find(callId);
    if (held.isPresent()) {
      // Rule 5: answer from the held result; the runtime invoked it again, so it expects it.
      debug(invoke, "invoke of held call: resending its result");
      if (outbox.isOrphaned(callId)) {
        outbox.hold(held.get());
      }
      sink.sendResult(held.get());
      return;
    }
    ToolSlots slots = byTool.getOrDefault(invoke.getTool(), Map.of()).get(invoke.getVersion());
    if (outbox.wasInterrupted(callId)) {
      // A previous attempt may have acted before the worker stopped: never run it twice.
      nack(sink, invoke, slots, InvocationOutcome.NACK_PREVIOUS_ATTEMPT_INTERRUPTED,
          PREVIOUS_ATTEMPT_INTERRUPTED, "a previous attempt of this call was interrupted by a"
              + " worker stop and may have acted; see 'phrony-worker outbox show " + callId + "'");
      return;
    }
    if (draining) {
      nack(sink, invoke, slots, InvocationOutcome.NACK_DRAINING, DRAINING,
          "worker is draining for shutdown; retry on another worker");
      return;
    }
    if (slots == null) {
      nack(sink, invoke, null, InvocationOutcome.NACK_UNKNOWN_TOOL, UNKNOWN_TOOL,
          "this worker serves no handler for " + invoke.getTool() + "@" + invoke.getVersion());
      return;
    }
    if (slots.busy.incrementAndGet() > slots.max) {
      slots.busy.decrementAndGet();
      nack(sink, invoke, slots, InvocationOutcome.NACK_CAPACITY_EXHAUSTED, CAPACITY_EXHAUSTED,
          slots.key() + " is running its maximum of " + slots.max + " calls on this worker");
      return;
    }
    Invocation inv = new Invocation(invoke, slots, codec, sink, clock.instant());
    running.put(callId, inv);
    // The thread is known to the invocation before it starts, so a cancel can always reach it.
    Thread thread = CALL_THREADS.newThread(() -> run(inv));
    thread.setName("call-" + callId); // a thread dump names the call
    inv.runningOn(thread);
    thread.start();
    if (invoke.getDeadlineUnixMs() > 0) {
      long delayMs = invoke.getDeadlineUnixMs() - clock.millis();
      timers.schedule(() -> expire(inv), Math.max(0, delayMs), TimeUnit.MILLISECONDS);
    }
    debug(invoke, "invoke admitted");
  }

  private void nack(CallSink sink, WorkInvoke invoke, ToolSlots slots, InvocationOutcome outcome,
      String code, String message) {
    (slots == null ? unknownTool : slots.metrics).count(outcome);
    debug(invoke, "nack {}: {}", code, message);
    sink.sendNack(invoke.getCallId(), code, message);
  }

  /** A per-call DEBUG line from the stream's thread, with the call's logging context. */
  private static void debug(WorkInvoke invoke, String format, Object... args) {
    if (log.isDebugEnabled()) {
      try (var ctx = LogContext.call(invoke.getCallId(), invoke.getSessionId(),
          invoke.getTool() + "@" + invoke.getVersion())) {
        log.debug(format, args);
      }
    }
  }

  private static LogContext.Scope context(Invocation inv) {
    return LogContext.call(inv.callId(), inv.sessionId(), inv.key());
  }

  /** Rule 4: interrupt, free the slot, and send nothing for this call, ever. */
  void onCancel(String callId, CallSink sink) {
    Invocation inv = running.get(callId);
    if (inv != null && cancel(inv)) {
      if (log.isDebugEnabled()) {
        try (var ctx = context(inv)) {
          log.debug("call cancelled by the runtime; handler interrupted");
        }
      }
      return;
    }
    // Already finished: the runtime has forgotten it, so its result must not go out now.
    sink.unsend(callId);
    Optional<HeldResult> held = outbox.find(callId);
    if (held.isPresent()) {
      outbox.markOrphaned(callId);
      try (var ctx = LogContext.call(callId, held.get().sessionId(), held.get().toolKey())) {
        log.info("call {} was cancelled after it finished; its result is kept as orphaned",
            callId);
      }
    }
  }

  void onResultAck(String callId) {
    outbox.release(callId);
  }

  /** The stream {@code sink} ended: its calls run on apart and its slots are gone. */
  void detach(CallSink sink) {
    if (current == sink) {
      current = null;
    }
    for (Invocation inv : running.values()) {
      if (inv.detachFrom(sink)) {
        releaseSlot(inv);
      }
    }
  }

  /** Stops taking work: every later invoke is nacked {@code draining}. */
  void startDraining() {
    draining = true;
  }

  /** Interrupts every running call (end of a drain). */
  void cancelAll() {
    running.values().forEach(this::cancel);
  }

  /**
   * Cancels {@code inv} unless an outcome already stands: it may have acted, so it is marked
   * interrupted; its slot is freed and its handler interrupted and left to finish apart.
   */
  private boolean cancel(Invocation inv) {
    if (!inv.cancel()) {
      return false;
    }
    outbox.markInterrupted(inv.callId());
    running.remove(inv.callId(), inv);
    releaseSlot(inv);
    apart.incrementAndGet();
    inv.interrupt();
    inv.slots().metrics.count(InvocationOutcome.CANCELLED);
    return true;
  }

  /** Calls the runtime should be told about at register: running ones and held results. */
  Set<String> inFlightIds() {
    Set<String> ids = new HashSet<>(running.keySet());
    ids.addAll(outbox.pendingIds());
    ids.addAll(outbox.interruptedIds());
    return ids;
  }

  int runningCount() {
    return running.size();
  }

  /** Slots in use for {@code key}. */
  public int busy(String key) {
    ToolSlots t = tools.get(key);
    return t == null ? 0 : t.busy.get();
  }

  /** True once draining started: every new invoke is nacked. */
  public boolean draining() {
    return draining;
  }

  /** Handlers that were cancelled (or outlived a drain) and may still be running. */
  int runningApart() {
    return apart.get();
  }

  // ---- handler side ----

  private void run(Invocation inv) {
    try (var ctx = context(inv)) {
      if (!argsAreJson(inv)) {
        return;
      }
      if (recordIntent(inv)) {
        CallOutcome outcome = execute(inv);
        if (outcome != null && inv.tryComplete()) {
          Instant end = clock.instant();
          inv.slots().metrics.handlerTime(Duration.between(inv.startedAt(), end));
          finish(inv, outcome, outcome instanceof CallOutcome.Payload
              ? InvocationOutcome.RESULT : InvocationOutcome.TOOL_ERROR, end);
        } else if (inv.state() == Invocation.State.CANCELLED) {
          apart.decrementAndGet();
          log.info("handler of cancelled call finished after {}; its result is dropped",
              elapsedMs(inv) + " ms");
        }
      }
    }
  }

  /**
   * Checks the arguments on the call's own thread, not the stream's I/O thread, where a large
   * document would hold up every other message. Not JSON: the call is nacked {@code
   * invalid_args} on its stream, which frees the slot it took (rule 6), and false is returned.
   */
  private boolean argsAreJson(Invocation inv) {
    if (codec.isJson(inv.rawArgs().asReadOnlyByteBuffer())) {
      return true;
    }
    if (inv.tryComplete()) {
      CallSink owner = inv.done();
      running.remove(inv.callId(), inv);
      releaseSlot(inv);
      inv.slots().metrics.count(InvocationOutcome.NACK_INVALID_ARGS);
      log.debug("nack {}: arguments are not valid JSON", INVALID_ARGS);
      if (owner != null && owner.live()) {
        owner.sendNack(inv.callId(), INVALID_ARGS, "arguments are not valid JSON");
      }
    } else if (inv.state() == Invocation.State.CANCELLED) {
      apart.decrementAndGet();
    }
    return false;
  }

  /** Runs the handler; null when a cancel or the deadline decided the outcome instead. */
  @SuppressWarnings("try")
  private CallOutcome execute(Invocation inv) {
    HandlerCatalog.Entry entry = inv.entry();
    try (var tccl = ContextClassLoader.swap(entry.classLoader())) {
      log.debug("handler started");
      return toOutcome(entry.handler().handle(inv));
    } catch (ToolException e) {
      return CallOutcome.error(e.code(), e.getMessage());
    } catch (Throwable t) {
      if (inv.isCancelled()) {
        return null;
      }
      log.warn("handler failed with {}", t.toString(), t);
      return CallOutcome.error(INTERNAL, t.getClass().getName()
          + (t.getMessage() == null ? "" : ": " + t.getMessage()));
    }
  }

  /**
   * Before a non-idempotent handler runs, its intent is durable, so a crash mid-call is known
   * afterwards and the call is never run again. False (and the call answered with an error) if
   * the intent cannot be written: running without it would break that promise.
   */
  private boolean recordIntent(Invocation inv) {
    try {
      outbox.recordIntent(new IntentRecord(inv.callId(), inv.sessionId(), inv.key(),
          inv.entry().descriptor().sideEffectClass().wireName(), inv.startedAt()));
      return true;
    } catch (UncheckedIOException e) {
      log.error("intent for call {} could not be made durable; not running it", inv.callId(), e);
      if (inv.tryComplete()) {
        finish(inv, CallOutcome.error(INTENT_NOT_DURABLE, "the worker could not record its"
            + " intent durably, so it did not run the call: " + e.getMessage()),
            InvocationOutcome.TOOL_ERROR, clock.instant());
      }
      return false;
    }
  }

  private CallOutcome toOutcome(ToolResult result) throws JsonProcessingException {
    byte[] payload = switch (result) {
      case null -> "null".getBytes(StandardCharsets.US_ASCII);
      case ToolResult.Json j -> {
        if (!codec.isJson(j.utf8())) {
          throw new ToolException(INTERNAL, "handler returned a JSON result that does not parse");
        }
        yield j.utf8();
      }
      case ToolResult.Value v -> codec.encode(v.value());
      case ToolResult.Text t -> t.text().getBytes(StandardCharsets.UTF_8);
    };
    if (payload.length > maxResultBytes) {
      return CallOutcome.error(RESULT_TOO_LARGE, "result of " + payload.length
          + " bytes exceeds the limit of " + maxResultBytes + " bytes");
    }
    return new CallOutcome.Payload(payload);
  }

  private void expire(Invocation inv) {
    if (!inv.tryComplete()) {
      return;
    }
    inv.interrupt();
    Instant end = clock.instant();
    Duration ran = Duration.between(inv.startedAt(), end);
    inv.slots().metrics.handlerTime(ran);
    Thread.ofVirtual().start(() -> {
      try (var ctx = context(inv)) {
        finish(inv, CallOutcome.error(DEADLINE_EXCEEDED, "the call's deadline passed after "
            + ran.toMillis() + " ms"), InvocationOutcome.DEADLINE_EXCEEDED, end);
      }
    });
  }

  private long elapsedMs(Invocation inv) {
    return Duration.between(inv.startedAt(), clock.instant()).toMillis();
  }

  /**
   * Holds the outcome (durably if the outbox does), then sends it on the owning stream.
   * {@code at} is when the outcome was decided (the handler returned, the deadline passed).
   */
  private void finish(Invocation inv, CallOutcome outcome, InvocationOutcome counted,
      Instant at) {
    inv.slots().metrics.count(counted);
    HeldResult held = new HeldResult(inv.callId(), inv.sessionId(), inv.key(),
        inv.entry().descriptor().sideEffectClass().wireName(), at, outcome);
    outbox.hold(held);
    CallSink owner = inv.done();
    running.remove(inv.callId(), inv);
    if (owner != null && owner.live()) {
      // Free the slot first: once the result is out, the runtime may send the next invoke.
      releaseSlot(inv);
      owner.sendResult(held);
    } else {
      // Rule 3: from an earlier stream; kept for in_flight, never sent on another stream.
      CallSink now = current;
      if (now != null && now.orphanWindowClosed()) {
        outbox.markOrphaned(inv.callId());
      }
      log.debug("call finished after its stream ended; result held");
    }
  }

  private void releaseSlot(Invocation inv) {
    if (inv.releaseSlot()) {
      inv.slots().busy.decrementAndGet();
    }
  }

  /** Instant of now, for sessions sharing the dispatcher's clock. */
  Instant now() {
    return clock.instant();
  }
}
