package dev.phrony.worker.work;

import dev.phrony.worker.call.ArgsCheck;
import dev.phrony.worker.ops.ToolMetrics;
import dev.phrony.worker.plugin.HandlerCatalog;

/**
 * One served {@code tool@version}: its slots as the runtime counts them (protocol.md rule 6),
 * its advertised maximum and its meters. Made once per handler; each call keeps a reference, so
 * finishing a call needs no lookup.
 *
 * <p>Slots are taken and given back only in the dispatcher's serialized context, as
 * {@link Permit}s; {@code busy} is volatile only so that metrics may read it from elsewhere.
 */
final class ToolSlots {
  final HandlerCatalog.Entry entry;
  /** {@code tool@version}, made once: it is on every call's log context and held result. */
  final String key;
  /** The declared side-effect class (wire name): it decides durability and intents. */
  final String sideEffectClass;
  final int max;
  final ToolMetrics metrics;
  final ArgsCheck argsCheck;
  /** An operator's bound on any call's run time, in ms; 0 for none. */
  final long maxRunTimeMs;
  private volatile int busy;

  ToolSlots(HandlerCatalog.Entry entry, int max, MetricsFactory metrics) {
    this.entry = entry;
    this.key = entry.key();
    this.sideEffectClass = entry.descriptor().sideEffectClass().wireName();
    this.max = max;
    this.argsCheck = entry.argsCheck();
    this.maxRunTimeMs = entry.maxRunTime().map(java.time.Duration::toMillis).orElse(0L);
    this.metrics = metrics.of(this);
  }

  /** Makes the meters of a tool once its slots exist (the gauge reads {@link #busy}). */
  interface MetricsFactory {
    ToolMetrics of(ToolSlots slots);
  }

  int busy() {
    return busy;
  }

  /** A free slot, or null when all {@link #max} are taken. */
  Permit tryAcquire() {
    return busy >= max ? null : acquire();
  }

  /**
   * A slot whatever the count: for a repeated invoke of a call already running, which the
   * runtime counts as taking a slot of its own (it freed the old one with the old stream).
   */
  Permit acquire() {
    busy++;
    return new Permit(this);
  }

  private void release() {
    busy--;
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
