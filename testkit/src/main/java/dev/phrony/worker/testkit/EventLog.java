package dev.phrony.worker.testkit;

import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Consumer;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bounded log of every message and stream end, plus its listeners.
 *
 * <p>Recording must stay cheap on the message hot path: a ring of the last {@code capacity} events
 * written lock-free (one atomic increment per event), so benchmarks can run for millions of
 * messages without growing memory. A snapshot taken while other threads record may miss events
 * whose slot is not written yet; it never shows a torn or out-of-order one.
 */
final class EventLog {

  private static final Logger log = LoggerFactory.getLogger(LocalRuntime.class);

  private final InstantSource clock;
  private final int capacity;
  private final AtomicReferenceArray<Event> ring;
  private final AtomicLong next = new AtomicLong();
  private final CopyOnWriteArrayList<Listener> listeners = new CopyOnWriteArrayList<>();

  /**
   * A subscriber; a broken one is reported once, with its stack trace, then only at debug level.
   */
  private static final class Listener {
    final Consumer<Event> consumer;
    volatile boolean reported;

    Listener(Consumer<Event> consumer) {
      this.consumer = consumer;
    }
  }

  EventLog(InstantSource clock, int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("event log capacity must be at least 1: " + capacity);
    }
    this.clock = clock;
    this.capacity = capacity;
    this.ring = new AtomicReferenceArray<>(capacity);
  }

  void record(long streamId, String workerId, Event.Direction direction, Object message) {
    long seq = next.getAndIncrement();
    Event event = new Event(seq, clock.instant(), streamId, workerId, direction, message);
    ring.set(slot(seq), event);
    for (Listener listener : listeners) {
      try {
        listener.consumer.accept(event);
      } catch (RuntimeException e) {
        if (!listener.reported) {
          listener.reported = true;
          log.warn(
              "event listener {} failed on {} (further failures are logged at debug level)",
              listener.consumer,
              event,
              e);
        } else {
          log.debug("event listener {} failed on {}: {}", listener.consumer, event, e.toString());
        }
      }
    }
  }

  /** Adds a listener, called on the recording thread for every later event; returns its remover. */
  LocalRuntime.Subscription subscribe(Consumer<Event> consumer) {
    Listener listener = new Listener(consumer);
    listeners.add(listener);
    return () -> listeners.remove(listener);
  }

  /**
   * The first event matching {@code condition}, among the retained ones or, waiting up to {@code
   * timeout}, a new one (see {@link LocalRuntime#awaitEvent}).
   *
   * @throws AssertionError if none arrives in time (its message lists the latest events)
   */
  Event await(Predicate<Event> condition, Duration timeout) {
    CompletableFuture<Event> hit = new CompletableFuture<>();
    // Subscribe before looking back, so an event recorded in between is seen one way or the other.
    LocalRuntime.Subscription subscription =
        subscribe(
            e -> {
              if (!hit.isDone() && condition.test(e)) {
                hit.complete(e);
              }
            });
    try {
      for (Event e : snapshot()) {
        if (condition.test(e)) {
          return e;
        }
      }
      return hit.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      throw new AssertionError(
          "no matching event within " + timeout + "; latest events:\n" + tail(20));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted while awaiting an event", e);
    } catch (ExecutionException e) {
      throw new AssertionError(e.getCause());
    } finally {
      subscription.close();
    }
  }

  private String tail(int n) {
    List<Event> all = snapshot();
    return all.subList(Math.max(0, all.size() - n), all.size()).stream()
        .map(Event::toString)
        .collect(Collectors.joining("\n  ", "  ", ""));
  }

  /** The retained events in order. */
  List<Event> snapshot() {
    long hi = next.get();
    long lo = Math.max(0, hi - capacity);
    List<Event> out = new ArrayList<>((int) (hi - lo));
    for (long seq = lo; seq < hi; seq++) {
      Event e = ring.get(slot(seq));
      // A slot still holding an older event (or none) belongs to a writer that has not finished.
      if (e != null && e.seq() == seq) {
        out.add(e);
      }
    }
    return List.copyOf(out);
  }

  private int slot(long seq) {
    return (int) (seq % capacity);
  }
}
