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

  /**
   * {@code pay@1.0.0}, a {@code non_idempotent_write} with {@code max} slots whose every call opens
   * its gate in {@code started}, waits for its gate in {@code release}, then answers {@code
   * {"paid":"<call id>"}}.
   */
  static TestHandler gatedPayment(int max, Gates started, Gates release) {
    return new TestHandler(
        "pay",
        "1.0.0",
        max,
        dev.phrony.worker.api.SideEffectClass.NON_IDEMPOTENT_WRITE,
        call -> {
          started.open(call.callId());
          release.of(call.callId()).join();
          return dev.phrony.worker.api.ToolResult.json("{\"paid\":\"" + call.callId() + "\"}");
        });
  }

  void open(String callId) {
    of(callId).complete(null);
  }
}
