package dev.phrony.worker.work;

import dev.phrony.worker.outbox.HeldResult;
import dev.phrony.worker.outbox.IntentRecord;
import dev.phrony.worker.outbox.ResultOutbox;
import java.util.Collection;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A durable outbox whose disk the test controls: the next hold or intent of a {@linkplain #gate
 * gated} call does not reach the real outbox until the test lets its {@link Write} proceed, as if
 * its flush blocked until then. Until that moment the real outbox knows nothing of it, as the
 * durable outbox before issue 12 knew an intent only once it was on disk.
 */
final class GatedOutbox implements ResultOutbox {
  /** A write that waits for the test: {@code proceed} lets it through to the real outbox. */
  record Write(String callId, CompletableFuture<Void> gate) {
    void proceed() {
      gate.complete(null);
    }
  }

  private final ResultOutbox inner;
  private final Set<String> gatedHolds = ConcurrentHashMap.newKeySet();
  private final Set<String> gatedIntents = ConcurrentHashMap.newKeySet();
  private final ConcurrentHashMap<String, CompletableFuture<Write>> holds =
      new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, CompletableFuture<Write>> intents =
      new ConcurrentHashMap<>();

  GatedOutbox(ResultOutbox inner) {
    this.inner = inner;
  }

  /** The next hold and the next intent of {@code callId} wait for the test (once each). */
  void gate(String callId) {
    gatedHolds.add(callId);
    gatedIntents.add(callId);
  }

  /** Completes when the hold of {@code callId} has started waiting. */
  CompletableFuture<Write> holdEntered(String callId) {
    return holds.computeIfAbsent(callId, k -> new CompletableFuture<>());
  }

  /** Completes when the intent of {@code callId} has started waiting. */
  CompletableFuture<Write> intentEntered(String callId) {
    return intents.computeIfAbsent(callId, k -> new CompletableFuture<>());
  }

  @Override
  public CompletableFuture<Void> holdAsync(HeldResult result) {
    if (!gatedHolds.remove(result.callId())) {
      return inner.holdAsync(result);
    }
    CompletableFuture<Void> proceed = new CompletableFuture<>();
    holdEntered(result.callId()).complete(new Write(result.callId(), proceed));
    return proceed.thenCompose(v -> inner.holdAsync(result));
  }

  @Override
  public CompletableFuture<Void> recordIntentAsync(IntentRecord intent) {
    if (!gatedIntents.remove(intent.callId())) {
      return inner.recordIntentAsync(intent);
    }
    CompletableFuture<Void> proceed = new CompletableFuture<>();
    intentEntered(intent.callId()).complete(new Write(intent.callId(), proceed));
    return proceed.thenCompose(v -> inner.recordIntentAsync(intent));
  }

  @Override
  public boolean needsIntent(String sideEffectClass) {
    return inner.needsIntent(sideEffectClass);
  }

  @Override
  public void markInterrupted(String callId) {
    inner.markInterrupted(callId);
  }

  @Override
  public boolean wasInterrupted(String callId) {
    return inner.wasInterrupted(callId);
  }

  @Override
  public Collection<String> interruptedIds() {
    return inner.interruptedIds();
  }

  @Override
  public void dropIntent(String callId) {
    inner.dropIntent(callId);
  }

  @Override
  public Optional<HeldResult> find(String callId) {
    return inner.find(callId);
  }

  @Override
  public void release(String callId) {
    inner.release(callId);
  }

  @Override
  public void markOrphaned(String callId) {
    inner.markOrphaned(callId);
  }

  @Override
  public boolean isOrphaned(String callId) {
    return inner.isOrphaned(callId);
  }

  @Override
  public Collection<String> pendingIds() {
    return inner.pendingIds();
  }

  @Override
  public int size() {
    return inner.size();
  }
}
