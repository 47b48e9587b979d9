package dev.phrony.worker.work;

import dev.phrony.worker.api.AsyncToolHandler;
import dev.phrony.worker.ops.ToolMetrics;
import dev.phrony.worker.plugin.HandlerCatalog;
import java.util.ArrayDeque;

/**
 * One served {@code tool@version} of one registration ({@link HandlerSet}): its slots as the
 * runtime counts them for that registration (protocol.md rule 6), its advertised maximum and its
 * meters. Each call keeps a reference, so finishing a call needs no lookup. A plugin rebuilt with
 * the same descriptor is {@link #rebind rebound} here: the registration and its counts stay, later
 * calls start on the new handler.
 *
 * <p>Slots are taken and given back only in the dispatcher's serialized context, as {@link
 * Permit}s; {@code busy} is volatile only so that metrics may read it from elsewhere.
 */
final class ToolSlots {
  /** The handler new calls start on; changed only by {@link #rebind}, in the context. */
  HandlerCatalog.Entry entry;

  /** {@code tool@version}, made once: it is on every call's log context and held result. */
  final String key;

  /** The declared side-effect class (wire name): it decides durability and intents. */
  final String sideEffectClass;

  final int max;
  final ToolMetrics metrics;

  /** An operator's bound on any call's run time, in ms; 0 for none. */
  final long maxRunTimeMs;

  /** The handler, if it never blocks; null for a {@code ToolHandler} that may. */
  AsyncToolHandler async;

  /**
   * Slots in use: written in the context, read by the slot gauge on a metrics scrape. Volatile for
   * that reader, as {@link CallTable}'s counts are (the same reason and cost).
   */
  private volatile int busy;

  /**
   * True while the handler is asynchronous and has not broken its promise not to block: its calls
   * then start on the stream's I/O thread. In the dispatcher's context only.
   */
  private boolean inline;

  /**
   * Invokes that came with every slot taken, oldest first, each waiting for a slot or its grace to
   * end. The runtime frees a cancelled call's slot, hands it to its next waiting call and only then
   * sends the {@code cancel}: that invoke overtakes the cancel that makes room for it ({@link
   * SlotWaits}). In the dispatcher's context only.
   */
  final ArrayDeque<CallRecord> waiting = new ArrayDeque<>();

  private Runnable freed = () -> {};

  /** Starts in a row that held the I/O thread too long. In the dispatcher's context only. */
  private int slowStarts;

  static final int SLOW_STARTS_TO_MOVE = 3;

  ToolSlots(HandlerCatalog.Entry entry, int max, MetricsFactory metrics) {
    this.entry = entry;
    this.key = entry.key();
    this.sideEffectClass = entry.descriptor().sideEffectClass().wireName();
    this.max = max;
    this.maxRunTimeMs = entry.maxRunTime().map(java.time.Duration::toMillis).orElse(0L);
    this.async = entry.handler() instanceof AsyncToolHandler a ? a : null;
    this.inline = async != null;
    this.metrics = metrics.of(this);
  }

  /**
   * In the context: later calls start on {@code next}, whose advertisement is this one's (same
   * descriptor hash and concurrency); calls already started run on where they started.
   */
  void rebind(HandlerCatalog.Entry next) {
    entry = next;
    async = next.handler() instanceof AsyncToolHandler a ? a : null;
    inline = async != null;
    slowStarts = 0;
  }

  /** Makes the meters of a tool once its slots exist (the gauge reads {@link #busy}). */
  interface MetricsFactory {
    ToolMetrics of(ToolSlots slots);
  }

  int busy() {
    return busy;
  }

  /** True if a call may start on the stream's I/O thread (see {@link #inline}). */
  boolean inline() {
    return inline;
  }

  /**
   * Takes note that starting a call held the I/O thread {@code heldMs}; returns true when this
   * moves the handler off it: the {@value #SLOW_STARTS_TO_MOVE}th start in a row over {@link
   * AsyncToolHandler#BLOCKING_LIMIT_MS}. In a row, so that one slow start (its first call loading
   * classes, a pause of the whole JVM) does not move a handler that keeps its promise, and one that
   * blocks on every call holds the thread only so many times.
   */
  boolean started(long heldMs) {
    if (heldMs <= AsyncToolHandler.BLOCKING_LIMIT_MS) {
      slowStarts = 0;
      return false;
    }
    if (++slowStarts < SLOW_STARTS_TO_MOVE || !inline) {
      return false;
    }
    inline = false;
    return true;
  }

  /** In the context: a start that had to be interrupted moves the handler off the I/O thread. */
  void moveOff() {
    inline = false;
  }

  /** A free slot, or null when all {@link #max} are taken. */
  Permit tryAcquire() {
    return busy >= max ? null : acquire();
  }

  /**
   * A slot whatever the count: for a repeated invoke of a call already running, which the runtime
   * counts as taking a slot of its own (it freed the old one with the old stream).
   */
  Permit acquire() {
    busy++;
    return new Permit(this);
  }

  private void release() {
    busy--;
    if (!waiting.isEmpty()) {
      freed.run();
    }
  }

  /**
   * Runs in the context whenever a slot is given back while invokes wait (see {@link #waiting}).
   */
  void onFreed(Runnable r) {
    freed = r;
  }

  /**
   * One taken slot, owned by one call. Releasing is idempotent, so the many ways a call can end
   * (result sent, nack, cancel, its stream gone) never give a slot back twice.
   */
  static final class Permit {
    private final ToolSlots slots;
    private boolean released;

    private Permit(ToolSlots slots) {
      this.slots = slots;
    }

    void release() {
      if (!released) {
        released = true;
        slots.release();
      }
    }

    boolean released() {
      return released;
    }
  }
}
