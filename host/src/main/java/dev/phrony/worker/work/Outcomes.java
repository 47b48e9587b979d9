package dev.phrony.worker.work;

import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.call.CallPipeline;
import dev.phrony.worker.ops.InvocationOutcome;
import dev.phrony.worker.ops.LogContext;
import dev.phrony.worker.outbox.DiskErrors;
import dev.phrony.worker.outbox.HeldResult;
import dev.phrony.worker.outbox.IntentRecord;
import dev.phrony.worker.outbox.ResultOutbox;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A started call's way to its answer: its intent made durable, its handler started, its outcome
 * decided, held (durably where the outbox does) and sent on its owner. Part of the {@link
 * Dispatcher}, in its context: the durable writes run elsewhere and post back, and each step
 * re-checks whether a cancel came meanwhile before it goes on.
 */
final class Outcomes {
  private static final Logger log = LoggerFactory.getLogger(Dispatcher.class);

  private final CallTable calls;
  private final ResultOutbox outbox;
  private final InstantSource clock;
  private final Consumer<Runnable> post;
  private final OrphanPolicy orphans;
  private final IdleWaiters idle;
  private CallStarter starter;

  Outcomes(
      CallTable calls,
      ResultOutbox outbox,
      InstantSource clock,
      Consumer<Runnable> post,
      OrphanPolicy orphans,
      IdleWaiters idle) {
    this.calls = calls;
    this.outbox = outbox;
    this.clock = clock;
    this.post = post;
    this.orphans = orphans;
    this.idle = idle;
  }

  /** The starter this hands an admitted call to (it reports back to {@link #finished}). */
  void starter(CallStarter starter) {
    this.starter = starter;
  }

  /** An admitted call: its intent first where its class needs one, then its handler. */
  void start(CallRecord call) {
    if (call.state() == CallRecord.State.INTENT) {
      recordIntent(call);
    } else {
      starter.start(call);
    }
  }

  private void recordIntent(CallRecord call) {
    call.intentWriting();
    CompletableFuture<Void> written;
    try {
      written =
          outbox.recordIntentAsync(
              new IntentRecord(
                  call.callId,
                  call.sessionId,
                  call.key,
                  call.slots.sideEffectClass,
                  call.admittedAt()));
    } catch (RuntimeException e) {
      written = CompletableFuture.failedFuture(e);
    }
    written.whenComplete((v, e) -> post.accept(() -> intentDone(call, e)));
  }

  private void intentDone(CallRecord call, Throwable failure) {
    call.intentDone(failure == null);
    if (call.state() == CallRecord.State.CANCELLED) {
      if (call.intentWritten()) {
        cancelledAfterIntent(call);
      }
      calls.forgetIfSettled(call);
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
              Dispatcher.INTENT_NOT_DURABLE,
              "the worker could not record its intent"
                  + " durably, so it did not run the call: "
                  + DiskErrors.reason(cause)),
          InvocationOutcome.TOOL_ERROR,
          false);
      return;
    }
    if (call.deadlinePassed()) {
      decide(
          call,
          CallPipeline.deadlineExceeded(elapsedMs(call)),
          InvocationOutcome.DEADLINE_EXCEEDED,
          false);
      return;
    }
    starter.start(call);
  }

  /**
   * A cancelled call whose intent is on disk: interrupted (never run again) if its handler began,
   * for it may have acted; otherwise its intent is dropped, so a later invoke runs it.
   */
  void cancelledAfterIntent(CallRecord call) {
    if (call.context().neverStarted()) {
      outbox.dropIntent(call.callId);
    } else {
      outbox.markInterrupted(call.callId);
    }
  }

  /** The "finished" event of a start ({@link CallStarter}): the handler's outcome, or why none. */
  void finished(CallRecord call, CallOutcome outcome, CallPipeline.Refusal refusal, long ranNanos) {
    handlerDone(call, outcome, refusal, ranNanos);
    idle.check(); // its plugin's code is no longer in use by it
  }

  private void handlerDone(
      CallRecord call, CallOutcome outcome, CallPipeline.Refusal refusal, long ranNanos) {
    boolean apart = call.handlerFinished();
    if (ranNanos > 0) {
      call.slots.metrics.handlerTime(Duration.ofNanos(ranNanos));
    }
    if (apart) {
      try (var ctx = context(call)) {
        log.info(
            "handler of a {} call finished after {} ms; its outcome is dropped",
            call.state() == CallRecord.State.CANCELLED ? "cancelled" : "timed-out",
            elapsedMs(call));
      }
      calls.forgetIfSettled(call);
      return;
    }
    if (refusal != null && refusal.nack()) {
      call.slots.metrics.count(InvocationOutcome.NACK_INVALID_ARGS);
      if (call.intentWritten()) {
        outbox.dropIntent(call.callId); // the handler never started
      }
      calls.remove(call);
      call.refused();
      CallSink owner = call.owner();
      if (owner != null && owner.live() && owner.open()) {
        log.debug("nack {}: {}", refusal.code(), refusal.message());
        owner.sendNack(call.callId, refusal.code(), refusal.message());
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
      calls.forgetIfSettled(call);
      return;
    }
    decide(
        call,
        outcome,
        outcome instanceof CallOutcome.Payload
            ? InvocationOutcome.RESULT
            : InvocationOutcome.TOOL_ERROR,
        true);
  }

  /**
   * The outcome stands: hold it, then send it. One the handler never produced (it did not run) is
   * held in memory only: a second run after a crash could not repeat an effect, and it must not
   * wait for a disk that refuses writes.
   */
  void decide(CallRecord call, CallOutcome outcome, InvocationOutcome counted, boolean handlerRan) {
    call.slots.metrics.count(counted);
    HeldResult held =
        new HeldResult(
            call.callId, call.sessionId, call.key, call.slots.sideEffectClass, now(), outcome);
    call.decided(held);
    CompletableFuture<Void> f;
    try {
      f = handlerRan ? outbox.holdAsync(held) : outbox.holdInMemoryAsync(held);
    } catch (RuntimeException e) {
      f = CompletableFuture.failedFuture(e);
    }
    if (f.isDone()) {
      held(call, f.isCompletedExceptionally() ? f.handle((v, e) -> e).join() : null);
    } else {
      f.whenComplete((v, e) -> post.accept(() -> held(call, e)));
    }
  }

  private void held(CallRecord call, Throwable failure) {
    call.holdDone();
    if (failure != null) {
      try (var ctx = context(call)) {
        log.error("result could not be held: {}", unwrap(failure).toString());
      }
    }
    if (call.state() == CallRecord.State.CANCELLED) {
      // Race 1: the cancel came while the result was being made durable. The runtime has
      // forgotten the call, so the result must not go out; it is kept for an operator.
      outbox.markOrphaned(call.callId);
      try (var ctx = context(call)) {
        log.info("call was cancelled while its result was being held; kept as orphaned");
      }
      calls.forgetIfSettled(call);
      return;
    }
    CallSink owner = call.owner();
    if (owner != null && owner.live()) {
      call.releaseSlot();
      if (owner.open()) {
        send(call, owner);
      } else {
        call.waitsForRescue(); // sent once that rescue is registered
      }
    } else {
      // Rule 3: its stream is gone; kept for in_flight, never sent on another stream.
      orphans.heldWithoutStream(call);
    }
    idle.check();
  }

  /** Sends {@code call}'s held result on {@code on}: it then waits for the ack there. */
  void send(CallRecord call, CallSink on) {
    if (on.sendResult(call.held())) {
      call.sent(on);
    } else {
      call.unsent(on); // its stream has just ended: that end decides (detached, handed over)
    }
  }

  long elapsedMs(CallRecord call) {
    return Duration.between(call.admittedAt(), now()).toMillis();
  }

  /**
   * The clock's time to the millisecond, which is all a call's times need: the system clock's
   * {@code instant()} is a native call, {@code millis()} an intrinsic, and each call takes two.
   */
  Instant now() {
    return Instant.ofEpochMilli(clock.millis());
  }

  private static Throwable unwrap(Throwable t) {
    return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
  }

  static LogContext.Scope context(CallRecord call) {
    return LogContext.call(call.callId, call.sessionId, call.key);
  }
}
