package dev.phrony.worker.time;

import java.time.Duration;
import java.time.InstantSource;

/**
 * Where every timer of the worker comes from: call deadlines, heartbeats, the lease watchdog, the
 * orphan window, reconnect backoff and the drain timeout. Injected, so tests drive time with a fake
 * one instead of sleeping; every handle is cancelled when its call or stream ends, so nothing
 * lingers in the queue holding a call's arguments.
 */
public interface Scheduler {

  /** A scheduled task; {@link #cancel} is idempotent and harmless after the task ran. */
  interface Handle {
    void cancel();
  }

  /** A handle for "nothing scheduled", so owners need no null checks. */
  Handle NONE = () -> {};

  /** Runs {@code task} once, {@code delay} from now (at once if it is zero or negative). */
  Handle schedule(Runnable task, Duration delay);

  /** The clock this scheduler's delays are measured on. */
  InstantSource clock();
}
