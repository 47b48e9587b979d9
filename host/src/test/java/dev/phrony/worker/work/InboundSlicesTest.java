package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * {@link InboundSlices} on a hand-run event loop: a task queue the test runs one task at a time.
 * The "flush" the handler queues on its first write stands for gRPC's, which is a task queued
 * behind the read the same way.
 */
class InboundSlicesTest {
  private final ArrayDeque<Runnable> tasks = new ArrayDeque<>();
  private final Executor loop = tasks::add;
  private final List<String> log = new ArrayList<>();
  private boolean flushQueued;

  /** Handles a message as a write would: records it, and queues a flush if none is queued. */
  private void write(String msg) {
    log.add(msg);
    if (!flushQueued) {
      flushQueued = true;
      tasks.add(() -> {
        log.add("flush");
        flushQueued = false;
      });
    }
  }

  private void runTasks() {
    Runnable task;
    while ((task = tasks.poll()) != null) {
      task.run();
    }
  }

  private static List<String> messages(int from, int to) {
    return IntStream.range(from, to).mapToObj(i -> "m" + i).toList();
  }

  @Test
  void a_read_is_handled_a_slice_at_a_time_with_the_flush_between_slices() {
    InboundSlices<String> slices = new InboundSlices<>(this::write, loop);
    messages(0, 20).forEach(slices::add); // one socket read delivers them all

    assertThat(log).as("nothing is handled inside the read").isEmpty();
    runTasks();

    List<String> expected = new ArrayList<>(messages(0, 8));
    expected.add("flush");
    expected.addAll(messages(8, 16));
    expected.add("flush");
    expected.addAll(messages(16, 20));
    expected.add("flush");
    assertThat(log).containsExactlyElementsOf(expected);
    assertThat(InboundSlices.SLICE).isEqualTo(8);
  }

  @Test
  void a_message_added_while_a_slice_runs_is_handled_after_those_before_it() {
    List<String> handled = new ArrayList<>();
    AtomicReference<InboundSlices<String>> self = new AtomicReference<>();
    Consumer<String> handler = msg -> {
      handled.add(msg);
      if (msg.equals("m1")) {
        self.get().add("late"); // gRPC delivers buffered messages when asked for more
      }
    };
    self.set(new InboundSlices<>(handler, loop));
    messages(0, 10).forEach(self.get()::add);
    runTasks();

    List<String> expected = new ArrayList<>(messages(0, 10));
    expected.add("late");
    assertThat(handled).containsExactlyElementsOf(expected);
  }

  @Test
  void drain_all_handles_what_is_left_at_once_and_the_slice_still_queued_finds_nothing() {
    List<String> handled = new ArrayList<>();
    InboundSlices<String> slices = new InboundSlices<>(handled::add, loop);
    messages(0, 20).forEach(slices::add);
    tasks.poll().run(); // one slice
    assertThat(handled).containsExactlyElementsOf(messages(0, 8));

    slices.drainAll(); // the stream ends
    assertThat(handled).containsExactlyElementsOf(messages(0, 20));
    runTasks();
    assertThat(handled).hasSize(20);

    slices.add("next"); // a later message is scheduled again
    assertThat(tasks).hasSize(1);
    runTasks();
    assertThat(handled).endsWith("next");
  }

  @Test
  void a_handler_that_throws_leaves_the_rest_to_the_next_slice() {
    List<String> handled = new ArrayList<>();
    InboundSlices<String> slices = new InboundSlices<>(msg -> {
      if (msg.equals("m3")) {
        throw new IllegalStateException("boom");
      }
      handled.add(msg);
    }, loop);
    messages(0, 6).forEach(slices::add);

    assertThatThrownBy(() -> tasks.poll().run()).hasMessage("boom");
    assertThat(tasks).as("the rest is scheduled").hasSize(1);
    runTasks();
    assertThat(handled).containsExactly("m0", "m1", "m2", "m4", "m5");
  }

  @Test
  void a_loop_that_refuses_tasks_gets_its_messages_handled_at_once() {
    List<String> handled = new ArrayList<>();
    InboundSlices<String> slices = new InboundSlices<>(handled::add, task -> {
      throw new RejectedExecutionException("shutting down");
    });
    slices.add("m0");
    slices.add("m1");
    assertThat(handled).containsExactly("m0", "m1");
  }
}
