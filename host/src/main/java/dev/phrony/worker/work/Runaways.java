package dev.phrony.worker.work;

import dev.phrony.worker.ops.LogContext;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Names the handlers that run on past their call's cancel or deadline (runaways), and decides when
 * they hold the worker so that it must leave routing. A look every {@link #PERIOD}, on a timer of
 * its own, at the handlers running on {@link HandlerThreads}.
 *
 * <ul>
 *   <li>A handler still running {@link #GRACE} after its call was cancelled or timed out (both set
 *       its cancel flag and interrupt it) is logged at WARN once: its tool, call id, how long it
 *       has run, whether it spins (used over a quarter of a core since the last look) and a stack
 *       sample of where it is; {@code phrony_worker_handler_runaways_total{tool}} counts it.
 *   <li>The rule: the worker holds itself out of routing while spinning runaways are as many as the
 *       cores (nothing is left for the calls it would be sent), or while runaways of any kind are
 *       more than {@code --max-runaway-handlers} (each holds a thread and what it allocated). Out
 *       of routing it stops heartbeating, as a drain does, so the runtime's lease lapses and it
 *       routes new calls elsewhere; {@code /readyz} fails. It heartbeats again, and so is routed
 *       again, once the runaways are under both bounds.
 * </ul>
 */
final class Runaways {
  private static final Logger log = LoggerFactory.getLogger(Runaways.class);

  static final Duration PERIOD = Duration.ofSeconds(1);
  static final Duration GRACE = Duration.ofSeconds(1);
  private static final int STACK_FRAMES = 12;

  /**
   * Its own timer, on real time: it measures threads' CPU against the wall clock, and the worker's
   * timers (a fake one in tests) keep only the call and stream logic.
   */
  private static final ScheduledExecutorService WATCH =
      Executors.newSingleThreadScheduledExecutor(
          Thread.ofPlatform().name("phrony-runaway-watch").daemon().factory());

  private final HandlerThreads threads;
  private final IntSupplier maxRunaway;
  private final IntSupplier apart;
  private final int cores = Runtime.getRuntime().availableProcessors();
  private final ThreadMXBean cpu = ManagementFactory.getThreadMXBean();

  private volatile boolean holding;
  private volatile String why = "";
  private volatile int spinning;
  private long lastLookNanos = System.nanoTime();
  private ScheduledFuture<?> next;
  private boolean stopped;

  /**
   * @param maxRunaway the operator's bound on runaways ({@code --max-runaway-handlers})
   * @param apart handlers running apart now, threads or stages (the dispatcher's count)
   */
  Runaways(HandlerThreads threads, IntSupplier maxRunaway, IntSupplier apart) {
    this.threads = threads;
    this.maxRunaway = maxRunaway;
    this.apart = apart;
  }

  synchronized void start() {
    if (!stopped && next == null) {
      next =
          WATCH.scheduleWithFixedDelay(
              this::look, PERIOD.toMillis(), PERIOD.toMillis(), TimeUnit.MILLISECONDS);
    }
  }

  synchronized void stop() {
    stopped = true;
    if (next != null) {
      next.cancel(false);
    }
  }

  /** True while runaways hold the worker: it stays out of routing (see the class comment). */
  boolean holding() {
    return holding;
  }

  /** Why it holds, in one line ({@code /readyz}); empty when it does not. */
  String why() {
    return why;
  }

  /** Runaways that used over a quarter of a core since the last look. */
  int spinning() {
    return spinning;
  }

  private void look() {
    try {
      lookNow();
    } catch (RuntimeException e) {
      log.warn("the runaway watch failed (it looks again in {} s)", PERIOD.toSeconds(), e);
    }
  }

  /** One look; package-private for tests that drive the scheduler. */
  void lookNow() {
    long now = System.nanoTime();
    long wall = Math.max(1, now - lastLookNanos);
    lastLookNanos = now;
    int spin = 0;
    for (HandlerThreads.Running r : threads.running()) {
      r.name();
      if (!r.call.context().isCancelled()) {
        continue;
      }
      if (r.cancelSeenNanos == 0) {
        r.cancelSeenNanos = now;
      }
      long cpuNow = cpu.isThreadCpuTimeSupported() ? cpu.getThreadCpuTime(r.thread.threadId()) : -1;
      // A quarter of a core, not all of it: on a busy machine a spinning thread gets its share.
      r.spinning =
          r.cpuNanosAtLastLook >= 0 && cpuNow >= 0 && cpuNow - r.cpuNanosAtLastLook > wall / 4;
      r.cpuNanosAtLastLook = cpuNow;
      if (r.spinning) {
        spin++;
      }
      if (!r.reported && now - r.cancelSeenNanos >= GRACE.toNanos()) {
        r.reported = true;
        report(r, now);
      }
    }
    spinning = spin;
    int runaway = apart.getAsInt();
    String reason =
        spin >= cores
            ? spin + " runaway handlers spin on the " + cores + " cores"
            : runaway > maxRunaway.getAsInt()
                ? runaway
                    + " runaway handlers, more than --max-runaway-handlers "
                    + maxRunaway.getAsInt()
                : "";
    boolean hold = !reason.isEmpty();
    if (hold && !holding) {
      log.warn(
          "leaving routing: {} (handlers that ignore their cancel or deadline; see the WARN for"
              + " each). Heartbeats stop, so the runtime routes new calls elsewhere once the lease"
              + " lapses; back when they end. Fix the plugin, or restart the worker to end them",
          reason);
    } else if (!hold && holding) {
      log.info("back in routing: the runaway handlers that held the worker ended or slowed down");
    }
    why = reason;
    holding = hold;
  }

  private void report(HandlerThreads.Running r, long now) {
    Exception where = new Exception("where the handler of " + r.call.callId + " runs");
    StackTraceElement[] stack = r.thread.getStackTrace();
    where.setStackTrace(Arrays.copyOf(stack, Math.min(stack.length, STACK_FRAMES)));
    try (var ctx = LogContext.call(r.call.callId, r.call.sessionId, r.call.key)) {
      log.warn(
          "runaway handler: {} call {} still runs {} ms after its call was cancelled or timed"
              + " out ({} ms in all){}: it ignores its interrupt and holds a thread; its result"
              + " will be dropped",
          r.call.key,
          r.call.callId,
          Duration.ofNanos(now - r.cancelSeenNanos).toMillis(),
          Duration.ofNanos(now - r.startedNanos).toMillis(),
          r.spinning ? ", spinning on a core" : "",
          where);
    }
    if (r.call.slots != null) {
      r.call.slots.metrics.runaway();
    }
  }
}
