package dev.phrony.worker.outbox;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.atomic.AtomicReference;

/** A clock tests move by hand. */
public final class MutableClock implements InstantSource {
  private final AtomicReference<Instant> now;

  public MutableClock(Instant start) {
    now = new AtomicReference<>(start);
  }

  @Override
  public Instant instant() {
    return now.get();
  }

  public void advance(Duration d) {
    now.updateAndGet(t -> t.plus(d));
  }
}
