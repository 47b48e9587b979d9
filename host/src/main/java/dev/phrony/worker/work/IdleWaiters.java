package dev.phrony.worker.work;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;

/**
 * Futures that complete once the calls reach a state: no call left at all while draining ({@link
 * #whenIdle}), or none matching a test (a stream's calls done, a plugin's code unused). Part of the
 * {@link Dispatcher}, in its context: every transition that may end a wait calls {@link #check}.
 */
final class IdleWaiters {
  private final CallTable calls;
  private final BooleanSupplier draining;
  private final List<CompletableFuture<Void>> idle = new ArrayList<>();
  private final List<Waiter> none = new ArrayList<>();

  private record Waiter(Predicate<CallRecord> test, CompletableFuture<Void> done) {}

  IdleWaiters(CallTable calls, BooleanSupplier draining) {
    this.calls = calls;
    this.draining = draining;
  }

  /**
   * {@code f} completes once, while draining, no call is running or being held and no result sent
   * on an open stream waits for its ack.
   */
  void whenIdle(CompletableFuture<Void> f) {
    idle.add(f);
    check();
  }

  /** {@code f} completes once no call matches {@code test}. */
  void whenNone(Predicate<CallRecord> test, CompletableFuture<Void> f) {
    none.add(new Waiter(test, f));
    check();
  }

  void check() {
    if (!none.isEmpty()) {
      none.removeIf(
          w -> {
            for (CallRecord c : calls.view()) {
              if (w.test().test(c)) {
                return false;
              }
            }
            w.done().complete(null);
            return true;
          });
    }
    if (idle.isEmpty()
        || !draining.getAsBoolean()
        || calls.running() > 0
        || calls.awaitingAckOnOpenStream()) {
      return;
    }
    idle.forEach(f -> f.complete(null));
    idle.clear();
  }
}
