package dev.phrony.worker.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** {@link Timeouts} on a fake scheduler: what fires, in which order, when, and what never does. */
class TimeoutsTest {

  private final Object lock = new Object();
  private final FakeScheduler scheduler = new FakeScheduler();
  private final List<String> fired = new ArrayList<>();
  private final Timeouts<String> timeouts = new Timeouts<>(lock, scheduler, 2, fired::add);

  private Timeouts.Entry<String> add(int lane, String item, long inMs) {
    synchronized (lock) {
      return timeouts.add(lane, item, Timeouts.now(scheduler.clock()) + inMs * 1_000_000);
    }
  }

  private void advanceMs(long ms) {
    scheduler.advance(Duration.ofMillis(ms));
  }

  @Test
  void firesEachLaneInDeadlineOrderAndNothingBeforeItIsDue() {
    add(0, "a1", 30);
    add(0, "a2", 60);
    add(1, "b1", 10);
    add(0, "a3", 90);

    advanceMs(9);
    assertThat(fired).isEmpty();
    advanceMs(1);
    assertThat(fired).containsExactly("b1");
    advanceMs(80);
    assertThat(fired).containsExactly("b1", "a1", "a2", "a3");
    assertThat(scheduler.pending()).isZero(); // nothing left armed once every lane is empty
  }

  @Test
  void aDeadlineEarlierThanTheTailIsPlacedInOrder() {
    add(0, "late", 200);
    add(0, "early", 20);

    advanceMs(20);
    assertThat(fired).containsExactly("early");
    advanceMs(180);
    assertThat(fired).containsExactly("early", "late");
  }

  @Test
  void anEarlierDeadlineReArmsTheTaskAndCancelsTheOldOne() {
    add(0, "in an hour", 3_600_000);
    add(1, "soon", 20);

    assertThat(scheduler.pending()).isOne();
    advanceMs(20);
    assertThat(fired).containsExactly("soon");
    advanceMs(3_600_000);
    assertThat(fired).containsExactly("soon", "in an hour");
  }

  @Test
  void aRemovedEntryNeverFires() {
    Timeouts.Entry<String> head = add(0, "removed head", 20);
    Timeouts.Entry<String> middle = add(0, "removed middle", 40);
    add(0, "kept", 60);
    Timeouts.Entry<String> tail = add(0, "removed tail", 80);
    add(1, "last", 120);
    synchronized (lock) {
      timeouts.remove(head);
      timeouts.remove(middle);
      timeouts.remove(tail);
      timeouts.remove(tail); // twice: no effect
    }

    advanceMs(1_000);
    assertThat(fired).containsExactly("kept", "last");
  }

  @Test
  void entriesAddedWhileItemsFireAreServedToo() {
    List<String> out = new ArrayList<>();
    AtomicReference<Timeouts<String>> self = new AtomicReference<>();
    self.set(
        new Timeouts<>(
            lock,
            scheduler,
            2,
            item -> {
              out.add(item);
              if (item.equals("first")) {
                synchronized (
                    lock) { // as Registry does: a leased call waits for its execution bound
                  self.get().add(1, "second", Timeouts.now(scheduler.clock()) + 10_000_000);
                }
              }
            }));
    synchronized (lock) {
      self.get().add(0, "first", Timeouts.now(scheduler.clock()) + 10_000_000);
    }

    advanceMs(10);
    assertThat(out).containsExactly("first");
    advanceMs(10);
    assertThat(out).containsExactly("first", "second");
  }
}
