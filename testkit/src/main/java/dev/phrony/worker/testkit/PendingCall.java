package dev.phrony.worker.testkit;

import java.time.Duration;
import java.time.InstantSource;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * A call the {@link Registry} dispatched, until it has an outcome: waiting in a queue or leased to
 * a worker id, its dispatch bound, and the caller's future. Guarded by the registry's lock.
 */
final class PendingCall {
  final Call call;
  final String key;
  final long startNanos;
  final CompletableFuture<Outcome> future;
  String workerId;
  boolean queued;
  Timeouts.Entry<PendingCall> timer;
  private final InstantSource clock;

  /** {@code onCancel} is told when the caller cancels {@link #future}. */
  PendingCall(Call call, InstantSource clock, Consumer<PendingCall> onCancel) {
    this.call = call;
    this.key = call.key();
    this.clock = clock;
    this.startNanos = Timeouts.now(clock);
    this.future = new DispatchFuture(this, onCancel);
  }

  Outcome.Trace trace() {
    return new Outcome.Trace(
        call.callId(), workerId, Duration.ofNanos(Timeouts.now(clock) - startNanos), false);
  }

  Outcome error(Outcome.Kind kind, String message) {
    return new Outcome.DispatchError(kind, message, trace());
  }

  /** The caller's handle; cancelling it cancels the call, as a cancelled context does in Go. */
  private static final class DispatchFuture extends CompletableFuture<Outcome> {
    private final PendingCall pending;
    private final Consumer<PendingCall> onCancel;

    DispatchFuture(PendingCall pending, Consumer<PendingCall> onCancel) {
      this.pending = pending;
      this.onCancel = onCancel;
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      boolean cancelled = super.cancel(mayInterruptIfRunning);
      if (cancelled) {
        onCancel.accept(pending);
      }
      return cancelled;
    }
  }
}
