package dev.phrony.worker.outbox;

import java.time.Instant;
import java.time.InstantSource;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A {@link ResultOutbox} in memory: results survive reconnects, not a process crash. It keeps no
 * intents: an intent guards a call against running again after a crash, which memory does not
 * outlive, so no call needs one here and none is ever interrupted. Also the in-memory index (and
 * fast path for non-durable results) of {@link DurableOutbox}, which keeps the intents itself.
 */
public final class MemoryOutbox implements ResultOutbox {

  /** A held result; {@code orphanedAt} is null while it is not orphaned. */
  record Entry(HeldResult result, Instant orphanedAt) {
    boolean orphaned() {
      return orphanedAt != null;
    }
  }

  private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

  private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();
  private final InstantSource clock;

  public MemoryOutbox() {
    this(InstantSource.system());
  }

  /** {@code clock} stamps the time a result is orphaned (for retention). */
  public MemoryOutbox(InstantSource clock) {
    this.clock = clock;
  }

  @Override
  public CompletableFuture<Void> holdAsync(HeldResult result) {
    entries.put(result.callId(), new Entry(result, null));
    return DONE;
  }

  /** Puts back a result loaded from disk, orphaned since {@code orphanedAt} (null: held). */
  void restore(HeldResult result, Instant orphanedAt) {
    entries.put(result.callId(), new Entry(result, orphanedAt));
  }

  @Override
  public Optional<HeldResult> find(String callId) {
    Entry e = entries.get(callId);
    return e == null ? Optional.empty() : Optional.of(e.result());
  }

  /** The entry of {@code callId}, or null. */
  Entry entry(String callId) {
    return entries.get(callId);
  }

  @Override
  public void release(String callId) {
    entries.remove(callId);
  }

  /** Removes {@code callId} if it is still {@code expected}; true if it did. */
  boolean release(String callId, Entry expected) {
    return entries.remove(callId, expected);
  }

  @Override
  public void markOrphaned(String callId) {
    markOrphaned(callId, clock.instant());
  }

  /**
   * Marks {@code callId} orphaned at {@code at}; returns the orphaned entry, or null if unknown.
   */
  Entry markOrphaned(String callId, Instant at) {
    return entries.computeIfPresent(
        callId, (id, e) -> e.orphaned() ? e : new Entry(e.result(), at));
  }

  @Override
  public boolean isOrphaned(String callId) {
    Entry e = entries.get(callId);
    return e != null && e.orphaned();
  }

  @Override
  public Collection<String> pendingIds() {
    return entries.entrySet().stream()
        .filter(e -> !e.getValue().orphaned())
        .map(Map.Entry::getKey)
        .toList();
  }

  @Override
  public int size() {
    return entries.size();
  }

  // ---- no intents (see above) ----

  @Override
  public boolean needsIntent(String sideEffectClass) {
    return false;
  }

  /** Not called (no call needs an intent here); completes at once should a caller do it anyway. */
  @Override
  public CompletableFuture<Void> recordIntentAsync(IntentRecord intent) {
    return DONE;
  }

  @Override
  public void dropIntent(String callId) {}

  @Override
  public void markInterrupted(String callId) {}

  @Override
  public boolean wasInterrupted(String callId) {
    return false;
  }

  @Override
  public Collection<String> interruptedIds() {
    return List.of();
  }

  /** Snapshot of orphaned results, for operators and tests. */
  public List<HeldResult> orphaned() {
    return entries.values().stream().filter(Entry::orphaned).map(Entry::result).toList();
  }

  /** Snapshot of all entries. */
  Collection<Entry> entries() {
    return List.copyOf(entries.values());
  }
}
