package dev.phrony.worker.outbox;

import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/** A {@link ResultOutbox} in memory: results survive reconnects, not a process crash. */
public final class MemoryOutbox implements ResultOutbox {

  private record Entry(HeldResult result, boolean orphaned) {}

  private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();

  @Override
  public void hold(HeldResult result) {
    entries.put(result.callId(), new Entry(result, false));
  }

  @Override
  public Optional<HeldResult> find(String callId) {
    Entry e = entries.get(callId);
    return e == null ? Optional.empty() : Optional.of(e.result());
  }

  @Override
  public void release(String callId) {
    entries.remove(callId);
  }

  @Override
  public void markOrphaned(String callId) {
    entries.computeIfPresent(callId, (id, e) -> new Entry(e.result(), true));
  }

  @Override
  public boolean isOrphaned(String callId) {
    Entry e = entries.get(callId);
    return e != null && e.orphaned();
  }

  @Override
  public Collection<String> pendingIds() {
    return entries.entrySet().stream().filter(e -> !e.getValue().orphaned())
        .map(java.util.Map.Entry::getKey).toList();
  }

  @Override
  public int size() {
    return entries.size();
  }

  /** Snapshot of orphaned results, for operators and tests. */
  public List<HeldResult> orphaned() {
    return entries.values().stream().filter(Entry::orphaned).map(Entry::result).toList();
  }
}
