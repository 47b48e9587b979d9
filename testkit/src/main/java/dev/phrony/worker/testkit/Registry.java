package dev.phrony.worker.testkit;

import dev.phrony.runtime.v1.WorkHandlerAdvertisement;
import dev.phrony.runtime.v1.WorkInFlightCall;
import dev.phrony.runtime.v1.WorkRegister;
import dev.phrony.runtime.v1.WorkToolNack;
import dev.phrony.runtime.v1.WorkToolResult;
import dev.phrony.worker.time.Scheduler;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentMap;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Workers, routing, wait queues and calls in flight: the runtime's {@code WorkerRegistry}.
 *
 * <p>All of it is guarded by one lock, as in the Go runtime, because its semantics depend on it: a
 * freed slot drains <em>every</em> wait queue, and removing a worker by id touches every call in
 * flight. Critical sections are map operations only; writes to streams are enqueued under the lock
 * and flushed, and dispatch futures completed, after it is released (see {@link Effects}).
 *
 * <p>One instance lives from a runtime start to its shutdown; the completed-call ledger is shared
 * across instances, as the real ledger is durable across restarts.
 */
final class Registry {

  private static final Logger log = LoggerFactory.getLogger(LocalRuntime.class);

  private final RuntimeSettings settings;
  private final ConcurrentMap<String, Outcome> ledger;
  private final Timeouts<PendingCall> timeouts;
  private final BooleanSupplier withholdResultAcks;
  private final BooleanSupplier loseHeartbeats;

  /**
   * Lanes of {@link #timeouts}: every call's first bound, then the execution bound of a leased one.
   */
  private static final int FIRST_BOUND = 0;

  private static final int EXECUTION_BOUND = 1;

  private final Object lock = new Object();
  // Everything below is guarded by lock.
  private boolean shuttingDown;

  /** Registrations by worker id, in registration order. */
  private final LinkedHashMap<String, RegisteredWorker> workers = new LinkedHashMap<>();

  /** tool@version to the workers advertising it, in registration order. */
  private final HashMap<String, List<RegisteredWorker>> byKey = new HashMap<>();

  /** tool@version to its FIFO of calls waiting for a slot; only non-empty queues are kept. */
  private final LinkedHashMap<String, ArrayDeque<PendingCall>> queues = new LinkedHashMap<>();

  /** Calls queued or leased, by call id. */
  private final HashMap<String, PendingCall> inflight = new HashMap<>();

  private final SessionIndex sessions = new SessionIndex();

  private final Scheduler timers;

  Registry(
      RuntimeSettings settings,
      ConcurrentMap<String, Outcome> ledger,
      Scheduler timers,
      BooleanSupplier withholdResultAcks,
      BooleanSupplier loseHeartbeats) {
    this.settings = settings;
    this.ledger = ledger;
    this.timeouts = new Timeouts<>(lock, timers, 2, this::onTimer);
    this.timers = timers;
    this.withholdResultAcks = withholdResultAcks;
    this.loseHeartbeats = loseHeartbeats;
  }

  // ---------------------------------------------------------------- stream side

  /**
   * Handles {@code register}; returns the error text (the stream then ends INVALID_ARGUMENT) or
   * null.
   */
  String register(WorkRegister reg, WorkerStream stream) {
    String id = reg.getWorkerId();
    if (id.isEmpty()) {
      return Wire.WORKER_ID_REQUIRED;
    }
    Effects fx = new Effects();
    synchronized (lock) {
      if (shuttingDown) {
        return Wire.SHUTTING_DOWN;
      }
      RegisteredWorker old = workers.get(id);
      if (old != null) {
        removeLocked(old, "replaced by a new registration on stream " + stream.streamId(), fx);
      }
      Instant now = settings.clock().instant();
      RegisteredWorker w = new RegisteredWorker(id, stream, reg, now);
      w.lease = now.plus(settings.leaseTtl());
      for (WorkHandlerAdvertisement ad : reg.getHandlersList()) {
        String key = Call.toolKey(ad.getTool(), ad.getVersion());
        w.handlers.put(
            key, new RegisteredWorker.Slot(ad)); // a repeated key: the last advertisement wins
        List<RegisteredWorker> list = byKey.computeIfAbsent(key, k -> new ArrayList<>(2));
        if (!list.contains(w)) {
          list.add(w);
        }
      }
      workers.put(id, w);
      for (WorkInFlightCall c : reg.getInFlightList()) {
        PendingCall p = inflight.get(c.getCallId());
        if (p != null) {
          p.workerId =
              id; // the call now belongs to this worker id (its result is accepted from it)
        } else if (ledger.containsKey(c.getCallId())) {
          ackLocked(w, c.getCallId(), fx);
        }
      }
      log.info(
          "worker registered worker_id={} stream={} handlers=[{}] in_flight={}",
          id,
          stream.streamId(),
          w.describeHandlers(),
          reg.getInFlightCount());
      drainQueuesLocked(fx);
    }
    fx.run();
    return null;
  }

  /** True while heartbeats are lost on their way in (see {@link LocalRuntime#loseHeartbeats}). */
  boolean heartbeatsLost() {
    return loseHeartbeats.getAsBoolean();
  }

  /** Renews the lease; false when the runtime has no registration for {@code workerId}. */
  boolean heartbeat(String workerId) {
    synchronized (lock) {
      RegisteredWorker w = workers.get(workerId);
      if (w == null) {
        return false;
      }
      if (!w.retired) {
        w.lease = settings.clock().instant().plus(settings.leaseTtl());
      }
      return true;
    }
  }

  /** Takes a registration out of routing for good; false when there is none for the id. */
  boolean retire(String workerId) {
    synchronized (lock) {
      RegisteredWorker w = workers.get(workerId);
      if (w == null) {
        return false;
      }
      w.retired = true;
      Instant now = settings.clock().instant();
      if (w.lease.isAfter(now)) {
        w.lease = now;
      }
      log.info("worker retired worker_id={} stream={}", workerId, w.stream.streamId());
      return true;
    }
  }

  /**
   * Handles a {@code result}; returns the error text (the stream then ends NOT_FOUND) or null. The
   * ack goes to whatever stream the sender's worker id is registered on now, as in Go.
   */
  String complete(String workerId, WorkToolResult result) {
    String callId = result.getCallId();
    Effects fx = new Effects();
    synchronized (lock) {
      PendingCall p = inflight.get(callId);
      if (p == null) {
        if (!ledger.containsKey(callId)) {
          return Wire.unknownCall(callId);
        }
        RegisteredWorker w = workers.get(workerId);
        if (w != null) {
          ackLocked(w, callId, fx);
        }
      } else if (p.workerId != null && !p.workerId.equals(workerId)) {
        return Wire.wrongWorker(callId, p.workerId, workerId);
      } else {
        Outcome.Trace trace = p.trace();
        Outcome outcome =
            result.hasError()
                ? new Outcome.ToolError(
                    result.getError().getCode(), result.getError().getMessage(), false, trace)
                : new Outcome.Result(result.getPayload().toByteArray(), trace);
        ledger.put(p.call.callId(), outcome); // the dispatched id: its hash is already computed
        finishLocked(p, outcome, fx);
        releaseSlotLocked(workerId, p.key, fx);
        RegisteredWorker w = workers.get(workerId);
        if (w != null) {
          ackLocked(w, callId, fx);
        }
      }
    }
    fx.run();
    return null;
  }

  /**
   * Handles a {@code nack}; returns the error text (the stream then ends NOT_FOUND) or null. As in
   * Go: no ledger lookup for an unknown call, no owner check, and the slot released is the
   * sender's.
   */
  String nack(String workerId, WorkToolNack nack) {
    Effects fx = new Effects();
    synchronized (lock) {
      PendingCall p = inflight.get(nack.getCallId());
      if (p == null) {
        return Wire.unknownCall(nack.getCallId());
      }
      Outcome outcome = new Outcome.ToolError(nack.getCode(), nack.getMessage(), true, p.trace());
      ledger.put(p.call.callId(), outcome);
      finishLocked(p, outcome, fx);
      releaseSlotLocked(workerId, p.key, fx);
    }
    fx.run();
    return null;
  }

  /**
   * The stream of {@code workerId} ended cleanly or by transport failure: remove whatever is
   * registered under that id.
   */
  void unregister(String workerId, String reason) {
    Effects fx = new Effects();
    synchronized (lock) {
      RegisteredWorker w = workers.get(workerId);
      if (w != null) {
        removeLocked(w, reason, fx);
      }
    }
    fx.run();
  }

  // ---------------------------------------------------------------- runtime side

  CompletableFuture<Outcome> dispatch(Call call) {
    Effects fx = new Effects();
    CompletableFuture<Outcome> future;
    synchronized (lock) {
      future = dispatchLocked(call, fx);
    }
    fx.run();
    return future;
  }

  private CompletableFuture<Outcome> dispatchLocked(Call call, Effects fx) {
    String callId = call.callId();
    PendingCall p = inflight.get(callId);
    if (p != null) {
      return p.future; // the same call dispatched again waits for the same outcome
    }
    p = new PendingCall(call, timers.clock(), this::cancelCall);
    if (shuttingDown) {
      return CompletableFuture.completedFuture(p.error(Outcome.Kind.SHUTDOWN, Wire.CANCELED));
    }
    Outcome stored = ledger.get(callId);
    if (stored != null) {
      Outcome.Trace was = stored.trace();
      return CompletableFuture.completedFuture(
          stored.withTrace(new Outcome.Trace(callId, was.workerId(), Duration.ZERO, true)));
    }
    inflight.put(callId, p);
    sessions.add(p.call);
    RegisteredWorker w = pickLocked(p.key);
    if (w != null) {
      String error = leaseAndInvokeLocked(p, w, fx);
      if (error != null) {
        forgetLocked(p);
        return CompletableFuture.completedFuture(p.error(Outcome.Kind.SEND_FAILED, error));
      }
    } else {
      ArrayDeque<PendingCall> queue = queues.computeIfAbsent(p.key, k -> new ArrayDeque<>());
      if (queue.size() >= settings.maxQueuePerKey()) {
        forgetLocked(p);
        return CompletableFuture.completedFuture(p.error(Outcome.Kind.QUEUE_FULL, Wire.QUEUE_FULL));
      }
      p.queued = true;
      queue.addLast(p);
    }
    p.timer = timeouts.add(FIRST_BOUND, p, p.startNanos + firstBound());
    return p.future;
  }

  /** Forgets the session's calls, then sends {@code cancel} for each one a worker is running. */
  void cancelSession(String sessionId) {
    Effects fx = new Effects();
    synchronized (lock) {
      List<PendingCall> calls = sessions.callIds(sessionId).stream().map(inflight::get).toList();
      // Go cancels in map order (random). Waiting calls go first here, so the slots freed by
      // the running ones are not handed to calls of the same session only to be cancelled.
      for (PendingCall p : calls) {
        if (p.queued) {
          cancelLocked(p, Outcome.Kind.CANCELLED, Wire.CANCELED, fx);
        }
      }
      for (PendingCall p : calls) {
        if (inflight.get(p.call.callId()) == p) {
          cancelLocked(p, Outcome.Kind.CANCELLED, Wire.CANCELED, fx);
        }
      }
    }
    fx.run();
  }

  private void cancelCall(PendingCall p) {
    Effects fx = new Effects();
    synchronized (lock) {
      if (inflight.get(p.call.callId()) == p) {
        cancelLocked(p, Outcome.Kind.CANCELLED, Wire.CANCELED, fx);
      }
    }
    fx.run();
  }

  /** A waiting call's bound: the queue wait, or the execution bound if that is shorter. */
  private long firstBound() {
    return Math.min(settings.queueWait().toNanos(), settings.executionTimeout().toNanos());
  }

  /**
   * The dispatch bound passed: a waiting call gives up, a running one is forgotten and cancelled.
   */
  private void onTimer(PendingCall p) {
    try {
      Effects fx = new Effects();
      synchronized (lock) {
        if (inflight.get(p.call.callId()) != p) {
          return;
        }
        long elapsed = Timeouts.now(timers.clock()) - p.startNanos;
        long bound = p.queued ? firstBound() : settings.executionTimeout().toNanos();
        if (elapsed < bound) {
          // Leased since the first bound was set: wait for the execution bound.
          p.timer = timeouts.add(EXECUTION_BOUND, p, p.startNanos + bound);
        } else {
          cancelLocked(p, Outcome.Kind.TIMEOUT, Wire.DEADLINE_EXCEEDED, fx);
        }
      }
      fx.run();
    } catch (RuntimeException e) { // on the timer thread it would stop the other due calls
      log.error("call_id={} timeout handling failed", p.call.callId(), e);
    }
  }

  /**
   * Go's {@code cancelCall}: a waiting call leaves its queue and reports what it waited for
   * (capacity or handler) joined with the cause; a leased call is forgotten, its slot freed (which
   * may hand a new invoke to the same worker first), then {@code cancel} is sent to its worker id.
   */
  private void cancelLocked(PendingCall p, Outcome.Kind kind, String cause, Effects fx) {
    if (p == null) {
      return;
    }
    if (p.queued) {
      boolean handlersExist = byKey.containsKey(p.key);
      Outcome.Kind waitKind =
          kind != Outcome.Kind.TIMEOUT
              ? kind
              : handlersExist ? Outcome.Kind.CAPACITY_EXHAUSTED : Outcome.Kind.NO_HANDLER;
      String sentinel = handlersExist ? Wire.CAPACITY_EXHAUSTED : Wire.NO_HANDLER;
      finishLocked(p, p.error(waitKind, Wire.joined(sentinel, cause)), fx);
      return;
    }
    finishLocked(p, p.error(kind, cause), fx);
    releaseSlotLocked(p.workerId, p.key, fx);
    RegisteredWorker w = workers.get(p.workerId);
    Duration delay = settings.cancelDelay();
    if (w != null && !delay.isZero()) {
      w.stream.sendAfter(Wire.cancel(p.call.callId()), delay, timers); // crossing mode
    } else if (w != null && w.stream.send(Wire.cancel(p.call.callId()))) {
      fx.flush(w.stream);
    }
    log.debug(
        "call_id={} {}: forgotten, cancel sent to worker_id={}",
        p.call.callId(),
        cause,
        p.workerId);
  }

  /** Drops every worker and fails every waiting call: the runtime is going away. Idempotent. */
  void shutdown(String reason) {
    Effects fx = new Effects();
    synchronized (lock) {
      if (shuttingDown) {
        return;
      }
      shuttingDown = true;
      List<PendingCall> waiting = new ArrayList<>();
      queues.values().forEach(waiting::addAll);
      queues.clear();
      for (PendingCall p : waiting) {
        finishLocked(p, p.error(Outcome.Kind.SHUTDOWN, Wire.CANCELED), fx);
      }
      for (RegisteredWorker w : List.copyOf(workers.values())) {
        removeLocked(w, reason, fx);
      }
    }
    fx.run();
  }

  // ---------------------------------------------------------------- views

  List<WorkerView> workers() {
    synchronized (lock) {
      Instant now = settings.clock().instant();
      Map<String, Integer> leased = new HashMap<>();
      for (PendingCall p : inflight.values()) {
        if (!p.queued && p.workerId != null) {
          leased.merge(p.workerId, 1, Integer::sum);
        }
      }
      List<WorkerView> views = new ArrayList<>(workers.size());
      for (RegisteredWorker w : workers.values()) {
        views.add(w.view(now, leased.getOrDefault(w.id, 0)));
      }
      return List.copyOf(views);
    }
  }

  Map<String, Integer> queues() {
    synchronized (lock) {
      Map<String, Integer> sizes = new LinkedHashMap<>();
      queues.forEach((key, q) -> sizes.put(key, q.size()));
      return Map.copyOf(sizes);
    }
  }

  int inflightCount() {
    synchronized (lock) {
      return inflight.size();
    }
  }

  // ---------------------------------------------------------------- internals (lock held)

  /** First worker for the key, in registration order, with a live lease and a free slot. */
  private RegisteredWorker pickLocked(String key) {
    List<RegisteredWorker> candidates = byKey.get(key);
    if (candidates == null) {
      return null;
    }
    Instant now = settings.clock().instant();
    for (RegisteredWorker w : candidates) {
      if (w.routable(now) && w.freeSlot(key) != null) {
        return w;
      }
    }
    return null;
  }

  /** Takes a slot and sends {@code invoke}; returns the send error (slot given back) or null. */
  private String leaseAndInvokeLocked(PendingCall p, RegisteredWorker w, Effects fx) {
    RegisteredWorker.Slot slot = w.handlers.get(p.key);
    slot.busy++;
    p.workerId = w.id;
    p.queued = false;
    if (!w.stream.send(Wire.invoke(p.call))) {
      slot.busy--;
      return "send invoke: " + WorkerStream.DEAD_STREAM_ERROR;
    }
    slot.invoked++;
    fx.flush(w.stream);
    return null;
  }

  /** Hands waiting calls to free slots, for every key (Go drains all queues on any release). */
  private void drainQueuesLocked(Effects fx) {
    for (Iterator<Map.Entry<String, ArrayDeque<PendingCall>>> it = queues.entrySet().iterator();
        it.hasNext(); ) {
      Map.Entry<String, ArrayDeque<PendingCall>> entry = it.next();
      ArrayDeque<PendingCall> queue = entry.getValue();
      RegisteredWorker w;
      while (!queue.isEmpty() && (w = pickLocked(entry.getKey())) != null) {
        PendingCall p = queue.pollFirst();
        String error = leaseAndInvokeLocked(p, w, fx);
        if (error != null) {
          finishLocked(p, p.error(Outcome.Kind.SEND_FAILED, error), fx);
        }
      }
      if (queue.isEmpty()) {
        it.remove();
      }
    }
  }

  /**
   * Frees a slot of whatever is registered under {@code workerId} now, then drains; nothing if not
   * registered.
   */
  private void releaseSlotLocked(String workerId, String key, Effects fx) {
    RegisteredWorker w = workerId == null ? null : workers.get(workerId);
    RegisteredWorker.Slot slot = w == null ? null : w.handlers.get(key);
    if (slot == null) {
      return;
    }
    if (slot.busy > 0) {
      slot.busy--;
    }
    drainQueuesLocked(fx);
  }

  private void removeLocked(RegisteredWorker w, String reason, Effects fx) {
    workers.remove(w.id);
    for (String key : w.handlers.keySet()) {
      List<RegisteredWorker> list = byKey.get(key);
      if (list != null) {
        list.remove(w);
        if (list.isEmpty()) {
          byKey.remove(key);
        }
      }
    }
    // Calls leased to this worker id (not waiting ones it merely claimed) lose their outcome.
    List<PendingCall> lost = new ArrayList<>();
    for (PendingCall p : inflight.values()) {
      if (!p.queued && w.id.equals(p.workerId)) {
        lost.add(p);
      }
    }
    for (PendingCall p : lost) {
      finishLocked(p, p.error(Outcome.Kind.INDETERMINATE, Wire.INDETERMINATE), fx);
    }
    log.info(
        "worker removed worker_id={} stream={} reason=\"{}\" indeterminate_calls={}",
        w.id,
        w.stream.streamId(),
        reason,
        lost.size());
  }

  private void ackLocked(RegisteredWorker w, String callId, Effects fx) {
    if (withholdResultAcks.getAsBoolean()) {
      log.debug("call_id={} result_ack withheld", callId);
      return;
    }
    if (w.stream.send(Wire.resultAck(callId))) {
      fx.flush(w.stream);
    }
  }

  private void finishLocked(PendingCall p, Outcome outcome, Effects fx) {
    inflight.remove(p.call.callId());
    sessions.remove(p.call);
    if (p.queued) {
      removeFromQueueLocked(p);
      p.queued = false;
    }
    timeouts.remove(p.timer);
    fx.complete(p.future, outcome);
  }

  /** Undoes a dispatch that never got going (its future is completed by the caller). */
  private void forgetLocked(PendingCall p) {
    inflight.remove(p.call.callId());
    sessions.remove(p.call);
  }

  private void removeFromQueueLocked(PendingCall p) {
    ArrayDeque<PendingCall> queue = queues.get(p.key);
    if (queue != null && queue.remove(p) && queue.isEmpty()) {
      queues.remove(p.key);
    }
  }
}
