package dev.phrony.worker.work;

import dev.phrony.worker.api.AsyncToolHandler;
import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.call.CallPipeline;
import dev.phrony.worker.ops.LogContext;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts a call's handler, inline on the stream's event loop (an {@link AsyncToolHandler} that
 * keeps its promise not to block) or on a thread of {@link HandlerThreads}, and posts one
 * "finished" event per start to the dispatcher's context. Watches inline starts that hold the loop.
 * Part of the {@link Dispatcher}: {@link #start} runs in its context; nothing here decides what is
 * sent.
 */
final class CallStarter {
  private static final Logger log = LoggerFactory.getLogger(CallStarter.class);

  /** How a start ended: an outcome, a refusal of the arguments, or neither (it never ran). */
  interface Finished {
    void finished(
        CallRecord call, CallOutcome outcome, CallPipeline.Refusal refusal, long ranNanos);
  }

  /** An asynchronous handler's start that holds the I/O thread: whose, how long, where. */
  record StalledStart(String callId, String key, long heldMs, List<StackTraceElement> where) {}

  /** Where handler code that does not start inline runs. */
  private final HandlerThreads threads = new HandlerThreads();

  private final CallPipeline pipeline;
  private final InstantSource clock;
  private final BooleanSupplier onIoThread;
  private final Consumer<Runnable> post;
  private final Finished finished;

  // ---- written around an inline start, read by the heartbeat's timer ----
  // Volatile, not posted to the context: they are there to see the I/O thread held by a
  // handleAsync that blocks, when no task posted to the context could run to look.
  /** The call whose handleAsync runs on the I/O thread now (null: none), since when, where. */
  private volatile CallRecord startingInline;

  private volatile long startingInlineSinceMs;
  private volatile Thread ioThread;

  /**
   * Guards {@link #startingInline}'s end against the watchdog's interrupt: an interrupt meant for a
   * stalled start must never outlive it and land on the I/O thread's own work.
   */
  private final Object inlineEnd = new Object();

  /** The stalled start the watchdog interrupted (null: none); read once it returned. */
  private volatile CallRecord interruptedInline;

  CallStarter(
      CallPipeline pipeline,
      InstantSource clock,
      BooleanSupplier onIoThread,
      Consumer<Runnable> post,
      Finished finished) {
    this.pipeline = pipeline;
    this.clock = clock;
    this.onIoThread = onIoThread;
    this.post = post;
    this.finished = finished;
  }

  /** In the context: the handler starts. */
  void start(CallRecord call) {
    // It runs on this handler even if its key is rebound meanwhile.
    call.handlerStarted(call.slots.entry, call.slots.async);
    if (call.slots.inline() && onIoThread.getAsBoolean()) {
      runInline(call);
      return;
    }
    threads.start(call, () -> runHandler(call));
  }

  HandlerThreads threads() {
    return threads;
  }

  /**
   * In the context, on the I/O thread: checks the arguments and starts an asynchronous handler
   * right here, with no thread of its own and no hand-off. A handler that kept the thread longer
   * than it promised is moved off it for its later calls.
   */
  private void runInline(CallRecord call) {
    try (var ctx = LogContext.call(call.callId, call.sessionId, call.key)) {
      CallPipeline.Refusal refusal =
          pipeline.checkArgs(call.context().rawArgs(), call.entry().argsCheck());
      if (refusal != null) {
        finished.finished(call, null, refusal, 0);
        return;
      }
      long t0 = System.nanoTime();
      long startedMs = clock.millis();
      ioThread = Thread.currentThread();
      startingInlineSinceMs = startedMs;
      startingInline = call;
      call.context().begin(); // in the context, as a cancel is: nothing came first
      CompletableFuture<CallOutcome> outcome =
          pipeline.start(call.async(), call.entry().classLoader(), call.context());
      synchronized (inlineEnd) {
        startingInline = null;
      }
      long heldMs = clock.millis() - startedMs;
      if (interruptedInline == call) {
        interruptedInline = null;
        Thread.interrupted(); // the watchdog's, for the handler: not the I/O thread's to keep
        call.slots.moveOff();
        log.warn(
            "handler {} kept the Work stream's thread {} ms in handleAsync and was interrupted:"
                + " its calls now run on threads of their own. An AsyncToolHandler must not"
                + " block; implement ToolHandler if it does",
            call.key,
            heldMs);
      } else if (call.slots.started(heldMs)) {
        log.warn(
            "handler {} kept the Work stream's thread over {} ms in handleAsync {} times in"
                + " a row (this time {} ms): its calls now run on threads of their own. An"
                + " AsyncToolHandler must not block; implement ToolHandler if it does",
            call.key,
            AsyncToolHandler.BLOCKING_LIMIT_MS,
            ToolSlots.SLOW_STARTS_TO_MOVE,
            heldMs);
      } else if (heldMs > AsyncToolHandler.BLOCKING_LIMIT_MS) {
        log.info(
            "handler {} kept the Work stream's thread {} ms in handleAsync (at most {} ms"
                + " is expected)",
            call.key,
            heldMs,
            AsyncToolHandler.BLOCKING_LIMIT_MS);
      }
      if (outcome.isDone()) {
        finished.finished(call, outcome.join(), null, Math.max(1, System.nanoTime() - t0));
      } else {
        finishWhenDone(call, outcome, t0);
      }
    }
  }

  /** Posts {@code call}'s "finished" event to the context once its handler's stage is done. */
  private void finishWhenDone(CallRecord call, CompletableFuture<CallOutcome> outcome, long t0) {
    outcome.thenAccept(
        o ->
            post.accept(
                () -> finished.finished(call, o, null, Math.max(1, System.nanoTime() - t0))));
  }

  /** On the call's own thread: the pipeline, then one "finished" event for the owner. */
  private void runHandler(CallRecord call) {
    try (var ctx = LogContext.call(call.callId, call.sessionId, call.key)) {
      CallPipeline.Refusal refusal =
          pipeline.checkArgs(call.context().rawArgs(), call.entry().argsCheck());
      if (refusal != null) {
        post.accept(() -> finished.finished(call, null, refusal, 0));
        return;
      }
      if (!call.context().begin()) {
        post.accept(() -> finished.finished(call, null, null, 0)); // cancelled before it started
        return;
      }
      log.debug("handler started");
      long t0 = System.nanoTime();
      if (call.async() != null) { // moved off the I/O thread: started here, finished later
        finishWhenDone(
            call, pipeline.start(call.async(), call.entry().classLoader(), call.context()), t0);
        return;
      }
      CallOutcome outcome =
          pipeline.run(call.entry().handler(), call.entry().classLoader(), call.context());
      long ran = System.nanoTime() - t0;
      post.accept(() -> finished.finished(call, outcome, null, ran));
    }
  }

  /**
   * From the heartbeat's timer, whose beats such a start holds back: a handleAsync that has kept
   * the stream's I/O thread over {@code thresholdMs} is logged with where it is (no message is read
   * or sent until it returns, so the lease may run out), interrupted, and returned. The interrupt
   * frees a start blocked in a sleep, a lock, a queue or a {@code get()}, so that the stream's
   * other calls, its heartbeats and a drain go on; the handler is then moved off the I/O thread.
   * One that ignores interrupts (a {@code join()}, a busy loop) keeps the thread until it returns.
   */
  Optional<StalledStart> reportStalledStart(long thresholdMs) {
    CallRecord call = startingInline;
    long heldMs = clock.millis() - startingInlineSinceMs;
    Thread thread = ioThread;
    if (call == null || heldMs < thresholdMs || thread == null) {
      return Optional.empty();
    }
    StalledStart stall =
        new StalledStart(call.callId, call.key, heldMs, List.of(thread.getStackTrace()));
    synchronized (inlineEnd) {
      if (startingInline == call) {
        interruptedInline = call;
        thread.interrupt();
      }
    }
    Exception where = new Exception("where the I/O thread is: " + thread.getName());
    where.setStackTrace(stall.where().toArray(StackTraceElement[]::new));
    try (var ctx = LogContext.call(call.callId, call.sessionId, call.key)) {
      log.warn(
          "handler {} has kept the Work stream's thread {} ms in handleAsync: no message is"
              + " read or sent, heartbeats included, until it returns; interrupted",
          stall.key(),
          heldMs,
          where);
    }
    return Optional.of(stall);
  }
}
