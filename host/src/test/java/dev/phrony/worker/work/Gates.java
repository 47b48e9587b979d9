package dev.phrony.worker.work;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Futures by call id, for handlers a test holds and releases one at a time: a handler completes
 * {@code started.of(id)} and waits on {@code release.of(id)}, whichever side asks first.
 */
final class Gates {
  private final Map<String, CompletableFuture<Void>> byId = new ConcurrentHashMap<>();

  CompletableFuture<Void> of(String callId) {
    return byId.computeIfAbsent(callId, k -> new CompletableFuture<>());
  }

  void open(String callId) {
    of(callId).complete(null);
  }
}
