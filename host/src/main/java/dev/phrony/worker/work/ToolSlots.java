package dev.phrony.worker.work;

import dev.phrony.worker.ops.ToolMetrics;
import dev.phrony.worker.plugin.HandlerCatalog;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One served {@code tool@version}: its slots in use as the runtime counts them, its advertised
 * maximum, and its meters. Made once per handler when the dispatcher is made; each running call
 * keeps a reference, so finishing a call needs no lookup.
 */
final class ToolSlots {
  final HandlerCatalog.Entry entry;
  /** {@code tool@version}, made once: it is on every call's log context and held result. */
  final String key;
  final int max;
  final AtomicInteger busy;
  final ToolMetrics metrics;

  ToolSlots(HandlerCatalog.Entry entry, int max, AtomicInteger busy, ToolMetrics metrics) {
    this.entry = entry;
    this.key = entry.key();
    this.max = max;
    this.busy = busy;
    this.metrics = metrics;
  }

  String key() {
    return key;
  }
}
