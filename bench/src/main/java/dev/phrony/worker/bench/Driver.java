package dev.phrony.worker.bench;

import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongFunction;

/**
 * A closed-loop load driver on a {@link LocalRuntime}: {@code concurrency} lanes, each
 * dispatching its next call as soon as the previous one has an outcome. Lanes chain on the
 * dispatch futures (no thread per lane), so the driver costs the machine as little as it can.
 * Calls finishing inside the measurement window (after the warm-up) are counted and timed.
 */
final class Driver {
  record Result(double perSecond, long ok, long errors, String firstError, double p50Ms,
      double p99Ms) {}

  private final LocalRuntime runtime;
  private final LongFunction<Call> calls;
  private final AtomicLong seq = new AtomicLong();
  private final AtomicLong errors = new AtomicLong();
  private final AtomicReference<String> firstError = new AtomicReference<>();
  private long from;
  private long until;
  private CountDownLatch lanesDone;

  Driver(LocalRuntime runtime, LongFunction<Call> calls) {
    this.runtime = runtime;
    this.calls = calls;
  }

  Result run(int concurrency, Duration warmup, Duration measure) throws InterruptedException {
    errors.set(0);
    firstError.set(null);
    List<Lane> lanes = new ArrayList<>(concurrency);
    lanesDone = new CountDownLatch(concurrency);
    long now = System.nanoTime();
    from = now + warmup.toNanos();
    until = from + measure.toNanos();
    for (int i = 0; i < concurrency; i++) {
      lanes.add(new Lane());
    }
    lanes.forEach(Lane::next);
    long deadline = until + TimeUnit.SECONDS.toNanos(60);
    // The runtime's ledger keeps every completed call; empty it as we go (as LocalRuntime says).
    while (!lanesDone.await(500, TimeUnit.MILLISECONDS)) {
      runtime.clearLedger();
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(lanesDone.getCount() + " lanes still running 60 s after"
            + " the end of the measurement");
      }
    }
    runtime.clearLedger();
    long ok = lanes.stream().mapToLong(l -> l.counted).sum();
    double[] p = Latencies.percentilesMs(lanes.stream().map(l -> l.latencies).toList(), 50, 99);
    return new Result(ok / (measure.toNanos() / 1e9), ok, errors.get(), firstError.get(), p[0],
        p[1]);
  }

  private final class Lane {
    final Latencies latencies = new Latencies();
    long counted;
    long sentAt;

    void next() {
      while (true) {
        sentAt = System.nanoTime();
        CompletableFuture<Outcome> f = runtime.dispatch(calls.apply(seq.incrementAndGet()));
        if (!f.isDone()) {
          f.whenComplete((o, t) -> {
            if (done(o, t)) {
              next();
            }
          });
          return;
        }
        if (!done(f.getNow(null), null)) {
          return;
        }
      }
    }

    /** Records an outcome; true when the lane goes on. */
    boolean done(Outcome o, Throwable t) {
      long now = System.nanoTime();
      if (o instanceof Outcome.Result) {
        if (now >= from && now < until) {
          counted++;
          latencies.add(now - sentAt);
        }
      } else {
        errors.incrementAndGet();
        firstError.compareAndSet(null, t != null ? t.toString() : String.valueOf(o));
      }
      if (now >= until) {
        lanesDone.countDown();
        return false;
      }
      return true;
    }
  }
}
