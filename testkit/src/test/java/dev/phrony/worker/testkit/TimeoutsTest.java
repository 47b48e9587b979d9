package dev.phrony.worker.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link Timeouts} on a real scheduler: what fires, in which order, and what never does. */
class TimeoutsTest {

    private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

    private final Object lock = new Object();
    private final ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1);
    private final BlockingQueue<String> fired = new LinkedBlockingQueue<>();
    private final Timeouts<String> timeouts = new Timeouts<>(lock, executor, 2, fired::add);

    @AfterEach
    void stop() {
        executor.shutdownNow();
    }

    private Timeouts.Entry<String> add(int lane, String item, long inMs) {
        synchronized (lock) {
            return timeouts.add(lane, item, System.nanoTime() + inMs * MS);
        }
    }

    /** The next {@code n} items fired, waiting at most 5 s for each. */
    private List<String> next(int n) throws InterruptedException {
        List<String> got = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String item = fired.poll(5, TimeUnit.SECONDS);
            assertThat(item).as("item %d of %d fired within 5 s (got %s)", i + 1, n, got).isNotNull();
            got.add(item);
        }
        return got;
    }

    @Test
    void firesEachLaneInDeadlineOrder() throws InterruptedException {
        add(0, "a1", 30);
        add(0, "a2", 60);
        add(1, "b1", 10);
        add(0, "a3", 90);

        assertThat(next(4)).containsExactly("b1", "a1", "a2", "a3");
    }

    @Test
    void aDeadlineEarlierThanTheTailIsPlacedInOrder() throws InterruptedException {
        add(0, "late", 200);
        add(0, "early", 20);

        assertThat(next(2)).containsExactly("early", "late");
    }

    @Test
    void anEarlierDeadlineReArmsTheTask() throws InterruptedException {
        add(0, "in an hour", 3_600_000);
        add(1, "soon", 20);

        assertThat(next(1)).containsExactly("soon");
    }

    @Test
    void aRemovedEntryNeverFires() throws InterruptedException {
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

        // "last" is due after every removed one, so they had their chance to fire before it.
        assertThat(next(2)).containsExactly("kept", "last");
        assertThat(fired).isEmpty();
    }

    @Test
    void entriesAddedWhileItemsFireAreServedToo() throws InterruptedException {
        BlockingQueue<String> out = new LinkedBlockingQueue<>();
        AtomicReference<Timeouts<String>> self = new AtomicReference<>();
        self.set(new Timeouts<>(lock, executor, 2, item -> {
            out.add(item);
            if (item.equals("first")) {
                synchronized (lock) { // as Registry does: a leased call waits for its execution bound
                    self.get().add(1, "second", System.nanoTime() + 10 * MS);
                }
            }
        }));
        synchronized (lock) {
            self.get().add(0, "first", System.nanoTime() + 10 * MS);
        }

        assertThat(out.poll(5, TimeUnit.SECONDS)).isEqualTo("first");
        assertThat(out.poll(5, TimeUnit.SECONDS)).isEqualTo("second");
    }
}
