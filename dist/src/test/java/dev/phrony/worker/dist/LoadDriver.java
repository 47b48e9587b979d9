package dev.phrony.worker.dist;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Steady load: one thread keeps {@code concurrency} calls in flight, round-robin over a set of keys
 * that the test may change while it runs, and records every call's outcome with when it was sent
 * and answered. {@code T} is whatever the runtime's client answers with.
 */
final class LoadDriver<T> implements AutoCloseable {
  /** One call of the load: its key, when it was sent and answered, its outcome or failure. */
  record Rec<T>(String key, long sentNanos, long doneNanos, T outcome, Throwable failure) {}

  private final int concurrency;
  private final Semaphore slots;
  private final Function<String, CompletableFuture<T>> dispatch;
  private final CopyOnWriteArrayList<String> keys;
  private final ConcurrentLinkedQueue<Rec<T>> done = new ConcurrentLinkedQueue<>();
  private final Thread thread;
  private volatile boolean stopped;

  LoadDriver(
      String name,
      int concurrency,
      List<String> keys,
      Function<String, CompletableFuture<T>> dispatch) {
    this.concurrency = concurrency;
    this.slots = new Semaphore(concurrency);
    this.dispatch = dispatch;
    this.keys = new CopyOnWriteArrayList<>(keys);
    this.thread = Thread.ofPlatform().name(name).daemon().unstarted(this::run);
  }

  LoadDriver<T> start() {
    thread.start();
    return this;
  }

  /** Adds {@code key} to the keys the load calls. */
  void add(String key) {
    keys.addIfAbsent(key);
  }

  /** No new call goes to {@code key} from now on (calls already sent still finish). */
  void remove(String key) {
    keys.remove(key);
  }

  /** The calls answered so far. */
  List<Rec<T>> done() {
    return List.copyOf(done);
  }

  /** Calls sent and not answered yet. */
  int inFlight() {
    return concurrency - slots.availablePermits();
  }

  private void run() {
    long n = 0;
    while (!stopped) {
      try {
        if (!slots.tryAcquire(50, TimeUnit.MILLISECONDS)) {
          continue;
        }
      } catch (InterruptedException e) {
        return;
      }
      if (stopped) {
        slots.release();
        return;
      }
      List<String> now = List.copyOf(keys);
      String key = now.get((int) (n++ % now.size()));
      // Each call stamped on the wall clock when sent and answered: what the tests report and
      // order the calls by (a real process's latency), never a wait.
      long sent = System.nanoTime();
      CompletableFuture<T> f;
      try {
        f = dispatch.apply(key);
      } catch (RuntimeException e) {
        done.add(new Rec<>(key, sent, System.nanoTime(), null, e)); // see above
        slots.release();
        continue;
      }
      f.whenComplete(
          (o, e) -> {
            done.add(new Rec<>(key, sent, System.nanoTime(), o, e)); // see above
            slots.release();
          });
    }
  }

  /**
   * Stops sending and waits until every call sent has been answered; returns every call's record.
   * Fails when calls are still unanswered after {@code timeout}.
   */
  List<Rec<T>> stop(Duration timeout) throws InterruptedException {
    stopped = true;
    thread.join(timeout.toMillis());
    if (!slots.tryAcquire(concurrency, timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      throw new AssertionError(
          inFlight() + " call(s) of the load still unanswered after " + timeout);
    }
    slots.release(concurrency);
    return done();
  }

  /** Calls per key, for the test's output. */
  static <T> Map<String, Integer> perKey(List<Rec<T>> recs) {
    Map<String, Integer> m = new TreeMap<>();
    for (Rec<T> r : recs) {
      m.merge(r.key(), 1, Integer::sum);
    }
    return m;
  }

  /** The records of {@code recs} that {@code bad} rejects, at most {@code limit} of them. */
  static <T> List<Rec<T>> first(
      List<Rec<T>> recs, java.util.function.Predicate<Rec<T>> bad, int limit) {
    List<Rec<T>> out = new ArrayList<>();
    for (Rec<T> r : recs) {
      if (bad.test(r) && out.size() < limit) {
        out.add(r);
      }
    }
    return out;
  }

  @Override
  public void close() {
    stopped = true;
    thread.interrupt();
  }
}
