package dev.phrony.worker.work;

import dev.phrony.worker.call.CallContext;
import dev.phrony.worker.call.CallPipeline;
import dev.phrony.worker.ops.InvocationOutcome;
import dev.phrony.worker.ops.LogContext;
import dev.phrony.worker.ops.ToolMetrics;
import dev.phrony.worker.outbox.HeldResult;
import dev.phrony.worker.outbox.ResultOutbox;
import dev.phrony.worker.time.Scheduler;
import dev.phrony.worker.work.Inbound.Invoke;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An invoke's way in: a call invoked again attaches to its run or gets its held result (rule 5);
 * one whose earlier attempt may have acted, or that no handler serves, or that comes while
 * draining, is nacked (rule 6); the others take a slot (or wait for one, see {@link SlotWaits}),
 * get their deadline and are handed to {@link Outcomes}. Part of the {@link Dispatcher}, in its
 * context.
 */
final class Admission {
  private static final Logger log = LoggerFactory.getLogger(Dispatcher.class);

  private final CallTable calls;
  private final ResultOutbox outbox;
  private final CallPipeline pipeline;
  private final Scheduler scheduler;
  private final InstantSource clock;
  private final Consumer<Runnable> post;
  private final Outcomes outcomes;
  private final BooleanSupplier draining;
  private final ToolMetrics unknownTool;
  private final Consumer<CallRecord> deadlinePassed;
  private final SlotWaits slotWaits;

  Admission(
      CallTable calls,
      ResultOutbox outbox,
      CallPipeline pipeline,
      Scheduler scheduler,
      Consumer<Runnable> post,
      Outcomes outcomes,
      BooleanSupplier draining,
      ToolMetrics unknownTool,
      Consumer<CallRecord> deadlinePassed,
      Runnable checkIdle) {
    this.calls = calls;
    this.outbox = outbox;
    this.pipeline = pipeline;
    this.scheduler = scheduler;
    this.clock = scheduler.clock();
    this.post = post;
    this.outcomes = outcomes;
    this.draining = draining;
    this.unknownTool = unknownTool;
    this.deadlinePassed = deadlinePassed;
    this.slotWaits =
        new SlotWaits(
            scheduler,
            post,
            Dispatcher.SLOT_GRACE,
            new SlotWaits.Ends() {
              @Override
              public void slotFree(CallRecord call) {
                tryStart(call, true);
              }

              @Override
              public void gaveUp(CallRecord call) {
                calls.remove(call);
                nack(
                    call.owner(),
                    call.invoke,
                    call.slots,
                    InvocationOutcome.NACK_CAPACITY_EXHAUSTED,
                    Dispatcher.CAPACITY_EXHAUSTED,
                    call.key
                        + " is running its maximum of "
                        + call.slots.max
                        + " calls on this worker");
                checkIdle.run();
              }
            });
  }

  /** The invokes waiting for a slot. */
  SlotWaits slotWaits() {
    return slotWaits;
  }

  /** In the context: an invoke arrived on {@code sink}, whose registration serves {@code set}. */
  void admit(Invoke invoke, CallSink sink, HandlerSet set) {
    String callId = invoke.callId();
    CallRecord existing = calls.get(callId);
    if (existing != null && existing.state() == CallRecord.State.WAITING) {
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
    ToolSlots slots = set.find(invoke.tool(), invoke.version());
    Optional<HeldResult> held = outbox.find(callId);
    if (held.isPresent()) {
      CallRecord call = CallRecord.resent(held.get(), slots, invoke, sink, calls);
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
          Dispatcher.PREVIOUS_ATTEMPT_INTERRUPTED,
          "a previous attempt of this call was interrupted and may"
              + " have acted; see 'phrony-worker outbox show "
              + callId
              + "'");
      return;
    }
    if (draining.getAsBoolean()) {
      nackDraining(sink, invoke, slots);
      return;
    }
    if (slots == null) {
      nack(
          sink,
          invoke,
          null,
          InvocationOutcome.NACK_UNKNOWN_TOOL,
          Dispatcher.UNKNOWN_TOOL,
          "this worker serves no handler for " + invoke.tool() + "@" + invoke.version());
      return;
    }
    CallRecord call = CallRecord.invoked(invoke, slots, sink, calls);
    calls.put(call);
    tryStart(call, false);
  }

  /** Rule 5: the handler ran; the runtime invoked it again, so it expects the held result. */
  private void resend(CallRecord call, Invoke invoke, CallSink sink) {
    debug(invoke, "invoke of a held call: resending its result");
    if (outbox.isOrphaned(call.callId)) {
      outbox.holdAsync(call.held()); // no longer orphaned: the runtime asks for it
    }
    outcomes.send(call, sink);
  }

  /**
   * Takes a slot and starts {@code call}, or has it wait for one. {@code waited}: it waited and is
   * first in line, so it may take a free slot; otherwise none overtakes an invoke that waits.
   */
  void tryStart(CallRecord call, boolean waited) {
    ToolSlots slots = call.slots;
    ToolSlots.Permit permit = waited || !SlotWaits.othersWait(slots) ? slots.tryAcquire() : null;
    if (permit == null) {
      slotWaits.await(call);
      debug(call.invoke, "every slot taken: waiting for one");
      return;
    }
    Invoke invoke = call.invoke;
    long deadline = deadlineOf(invoke, slots);
    CallContext context =
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
    // Counted as running from here on.
    call.admitted(permit, context, outcomes.now(), outbox.needsIntent(slots.sideEffectClass));
    debug(invoke, "invoke admitted");
    if (deadline > 0) {
      long leftMs = deadline - clock.millis();
      if (leftMs <= 0) { // passed already: the handler is not started at all
        outcomes.decide(
            call, CallPipeline.deadlineExceeded(0), InvocationOutcome.DEADLINE_EXCEEDED, false);
        return;
      }
      call.deadline(
          scheduler.schedule(
              () -> post.accept(() -> deadlinePassed.accept(call)), Duration.ofMillis(leftMs)));
    }
    outcomes.start(call);
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
    if (call.state() == CallRecord.State.CANCELLED && call.held() == null) {
      nack(
          sink,
          invoke,
          call.slots,
          InvocationOutcome.NACK_PREVIOUS_ATTEMPT_INTERRUPTED,
          Dispatcher.PREVIOUS_ATTEMPT_INTERRUPTED,
          "this call was cancelled while its handler ran, which may"
              + " have acted; it is not run a second time");
      return;
    }
    call.attach(sink);
    debug(invoke, "invoke of a running call attached to this stream");
  }

  void nack(
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

  void nackDraining(CallSink sink, Invoke invoke, ToolSlots slots) {
    nack(
        sink,
        invoke,
        slots,
        InvocationOutcome.NACK_DRAINING,
        Dispatcher.DRAINING,
        "worker is draining for shutdown; retry on another worker");
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
}
