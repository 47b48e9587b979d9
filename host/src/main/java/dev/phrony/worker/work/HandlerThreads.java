package dev.phrony.worker.work;

import java.util.Collection;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where handler code runs when it does not start inline: platform threads, pooled.
 *
 * <p>Not virtual threads: a virtual thread that computes without blocking keeps its carrier, and
 * there are only as many carriers as cores. A handler spinning on that many calls (a loop that
 * ignores its interrupt) held every carrier, and every other virtual thread (the other plugins'
 * calls, the ops endpoint) waited for good. Platform threads are time-sliced by the OS: a spinning
 * handler takes its share of the cores, not all of them. Pooled, so a call costs a hand-off to an
 * idle thread, as a virtual thread's start does, and no thread creation.
 *
 * <p>A pooled thread serves many calls in turn, so an interrupt must reach the call it is for and
 * no later one: each run is a {@link Running} whose interrupt and end exclude each other.
 */
public final class HandlerThreads {
  private static final Logger log = LoggerFactory.getLogger(HandlerThreads.class);

  /** How long an idle handler thread is kept for the next call. */
  private static final long KEEP_IDLE_SECONDS = 60;

  private static final String IDLE_NAME = "phrony-handler";
  private static final AtomicInteger NUMBER = new AtomicInteger();

  /** One pool for the process: threads are what it has of them, not what a dispatcher has. */
  private static final ThreadPoolExecutor POOL =
      new ThreadPoolExecutor(
          0,
          Integer.MAX_VALUE,
          KEEP_IDLE_SECONDS,
          TimeUnit.SECONDS,
          new SynchronousQueue<>(),
          r -> {
            Thread t = new Thread(r, IDLE_NAME + "-" + NUMBER.incrementAndGet());
            t.setDaemon(true);
            // Never a plugin's loader, inherited from whichever thread made it.
            t.setContextClassLoader(HandlerThreads.class.getClassLoader());
            // A handler's Error is the call pipeline's to report; one that escapes it ends this
            // thread only, never the process as a core thread's would.
            t.setUncaughtExceptionHandler(
                (thread, e) -> log.error("handler thread {} ended by", thread.getName(), e));
            return t;
          });

  /** A handler running on one of the threads now. */
  static final class Running {
    final CallRecord call;
    final Thread thread;
    final long startedNanos;
    private boolean ended; // guarded by this
    private String idleName; // guarded by this; set once named

    // ---- the runaway watch's, on its timer thread only ----
    long cancelSeenNanos;
    long cpuNanosAtLastLook = -1;
    boolean reported;
    boolean spinning;

    private Running(CallRecord call, Thread thread) {
      this.call = call;
      this.thread = thread;
      this.startedNanos = System.nanoTime();
    }

    /** Interrupts the handler if it still runs this call. */
    synchronized void interrupt() {
      if (!ended) {
        thread.interrupt();
      }
    }

    /**
     * Names the thread after its call ({@code call-<id>}), for a thread dump and the runaway WARN.
     * Done by the watch, from its own thread, for calls still running at a look: a platform
     * thread's own rename is a system call (its OS name too), two per call when every call did it.
     */
    synchronized void name() {
      if (!ended && idleName == null) {
        idleName = thread.getName();
        thread.setName("call-" + call.callId);
      }
    }

    private synchronized void end() {
      ended = true;
      Thread.interrupted(); // one meant for this call, not for the thread's next
      if (idleName != null) {
        thread.setName(idleName);
      }
    }
  }

  private final ConcurrentHashMap<CallRecord, Running> running = new ConcurrentHashMap<>();

  HandlerThreads() {}

  /**
   * Ends the idle handler threads now (new ones are made as calls come): what a plugin left in
   * their {@code ThreadLocal}s goes with them, and no longer pins an unloaded plugin's class
   * loader. Busy threads go once idle, within the keep-alive.
   */
  static synchronized void retireIdle() {
    POOL.setKeepAliveTime(1, TimeUnit.NANOSECONDS); // wakes the idle ones, which time out
    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200);
    while (POOL.getPoolSize() > POOL.getActiveCount() && System.nanoTime() < until) {
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
    }
    POOL.setKeepAliveTime(KEEP_IDLE_SECONDS, TimeUnit.SECONDS);
  }

  /**
   * {@code -Dphrony.handlers.threads=virtual}: handlers on virtual threads, as before, for plugins
   * trusted never to compute for long: about half the worker's CPU per blocking call (bin/bench
   * --probe host --durability none), but a handler spinning on as many calls as there are cores
   * stops every other call.
   */
  private static final boolean VIRTUAL =
      "virtual".equals(System.getProperty("phrony.handlers.threads"));

  /** Runs {@code body}, the handler of {@code call}, on a thread of the pool. */
  void start(CallRecord call, Runnable body) {
    if (VIRTUAL) {
      Thread.ofVirtual().start(() -> run(call, body));
    } else {
      POOL.execute(() -> run(call, body));
    }
  }

  private void run(CallRecord call, Runnable body) {
    Running r = new Running(call, Thread.currentThread());
    running.put(call, r);
    try {
      body.run();
    } finally {
      r.end();
      running.remove(call, r);
    }
  }

  /** From the context: a cancel or deadline interrupts {@code call}'s handler, if it runs here. */
  void interrupt(CallRecord call) {
    Running r = running.get(call);
    if (r != null) {
      r.interrupt();
    }
  }

  /** Handlers running now, from any thread. */
  Collection<Running> running() {
    return running.values();
  }
}
