package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
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
      tasks.add(
          () -> {
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
    InboundSlices slices = new InboundSlices(loop);
    messages(0, 20).forEach(m -> slices.add(() -> write(m))); // one socket read delivers them

    assertThat(log).as("nothing is handled inside the read").isEmpty();
    runTasks();

    List<String> expected = new ArrayList<>(messages(0, 8));
    expected.add("flush");
    expected.addAll(messages(8, 20)); // the second slice is twice the first
    expected.add("flush");
    assertThat(log).containsExactlyElementsOf(expected);
  }

  @Test
  void slices_double_up_to_the_largest_and_start_small_again_after_the_queue_empties() {
    InboundSlices slices = new InboundSlices(loop);
    int burst = 8 + 16 + 32 + 64 + 64 + 3;
    messages(0, burst).forEach(m -> slices.add(() -> write(m)));
    runTasks();
    messages(burst, burst + 10).forEach(m -> slices.add(() -> write(m))); // the next read
    runTasks();

    List<Integer> perSlice = new ArrayList<>();
    int n = 0;
    for (String entry : log) {
      if (entry.equals("flush")) {
        perSlice.add(n);
        n = 0;
      } else {
        n++;
      }
    }
    assertThat(perSlice).containsExactly(8, 16, 32, 64, 64, 3, 8, 2);
    assertThat(log)
        .filteredOn(e -> !e.equals("flush"))
        .containsExactlyElementsOf(messages(0, burst + 10));
    assertThat(InboundSlices.FIRST_SLICE).isEqualTo(8);
    assertThat(InboundSlices.MAX_SLICE).isEqualTo(64);
  }

  @Test
  void a_message_added_while_a_slice_runs_is_handled_after_those_before_it() {
    InboundSlices slices = new InboundSlices(loop);
    for (String m : messages(0, 10)) {
      slices.add(
          () -> {
            log.add(m);
            if (m.equals("m1")) {
              slices.add(
                  () -> log.add("late")); // gRPC delivers buffered messages when asked for more
            }
          });
    }
    runTasks();

    List<String> expected = new ArrayList<>(messages(0, 10));
    expected.add("late");
    assertThat(log).containsExactlyElementsOf(expected);
  }

  @Test
  void the_end_of_a_stream_runs_after_every_message_received_before_it() {
    InboundSlices slices = new InboundSlices(loop);
    messages(0, 20).forEach(m -> slices.add(() -> log.add(m)));
    tasks.poll().run(); // one slice
    slices.add(() -> log.add("end"));
    runTasks();

    List<String> expected = new ArrayList<>(messages(0, 20));
    expected.add("end");
    assertThat(log).containsExactlyElementsOf(expected);

    slices.add(() -> log.add("next")); // idle again: a later add schedules a slice
    assertThat(tasks).hasSize(1);
    runTasks();
    assertThat(log).endsWith("next");
  }

  @Test
  void adds_from_another_thread_run_on_the_loop_in_order() throws Exception {
    InboundSlices slices = new InboundSlices(loop);
    List<Thread> ranOn = new ArrayList<>();
    Thread connecting =
        new Thread(
            () ->
                messages(0, 12)
                    .forEach(
                        m ->
                            slices.add(
                                () -> {
                                  log.add(m);
                                  ranOn.add(Thread.currentThread());
                                })));
    connecting.start();
    connecting.join();
    assertThat(log).isEmpty();

    runTasks();
    assertThat(log).containsExactlyElementsOf(messages(0, 12));
    assertThat(ranOn).containsOnly(Thread.currentThread());
  }

  @Test
  void a_task_that_throws_leaves_the_rest_to_the_next_slice() {
    InboundSlices slices = new InboundSlices(loop);
    for (String m : messages(0, 6)) {
      slices.add(
          () -> {
            if (m.equals("m3")) {
              throw new IllegalStateException("boom");
            }
            log.add(m);
          });
    }

    assertThatThrownBy(() -> tasks.poll().run()).hasMessage("boom");
    assertThat(tasks).as("the rest is scheduled").hasSize(1);
    runTasks();
    assertThat(log).containsExactly("m0", "m1", "m2", "m4", "m5");
  }

  @Test
  void a_loop_that_refuses_tasks_gets_them_run_at_once() {
    InboundSlices slices =
        new InboundSlices(
            task -> {
              throw new RejectedExecutionException("shutting down");
            });
    slices.add(() -> log.add("m0"));
    slices.add(() -> log.add("m1"));
    assertThat(log).containsExactly("m0", "m1");
  }
}
