package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkInFlightCall;
import dev.phrony.runtime.v1.WorkRegister;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Event;
import dev.phrony.worker.testkit.FakeScheduler;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * Protocol.md rule 9: a crossing kill costs only the call the runtime had already forgotten. On
 * LocalRuntime, which keeps the runtime's registry order (a register of a known id removes the old
 * entry, making its calls indeterminate, before it reads {@code in_flight}; {@code in_flight} under
 * another id moves a tracked call; a stream ended with an error status leaves a dead entry, first
 * in routing, failing each invoke sent to it), and its crossing mode (the cancel held back, so a
 * result crosses it on the wire).
 */
class KillContainmentTest {
  private final Gates release = new Gates();
  private final Gates started = new Gates();

  @Test
  void a_crossing_kill_hands_every_other_call_over_and_loses_only_a_call_sent_in_the_window()
      throws Exception {
    TestHandler pay = Gates.gatedPayment(32, started, release);
    MemoryOutbox outbox = new MemoryOutbox();
    try (LocalRuntime rt =
            LocalRuntime.builder()
                .port(0)
                .cancelDelay(Duration.ofMinutes(1)) // the cancel comes after the result: crossed
                .withholdResultAcks(true)
                .start();
        WorkClient client =
            new WorkClient(
                WorkOptions.defaults(rt.target(), new WorkerIdentity("w1", "", "")),
                TestHandler.catalog(pay),
                outbox,
                null,
                bound -> bound / 2)) {
      client.start();
      Await.until("registered", client::registered);

      // 5 calls answered, their results held by the worker until the runtime acks them.
      List<String> held = ids("held", 5);
      List<CompletableFuture<Outcome>> heldOutcomes = dispatchAll(rt, held);
      held.forEach(id -> release.of(id).complete(null));
      for (CompletableFuture<Outcome> f : heldOutcomes) {
        assertThat(f.get(10, TimeUnit.SECONDS)).isInstanceOf(Outcome.Result.class);
      }
      Await.until("their results held, unacked", () -> outbox.pendingIds().containsAll(held));
      rt.withholdResultAcks(false);

      // 10 calls running.
      List<String> running = ids("running", 10);
      List<CompletableFuture<Outcome>> runningOutcomes = dispatchAll(rt, running);
      for (String id : running) {
        started.of(id).get(10, TimeUnit.SECONDS);
      }

      // A call dispatched while the dead entry still routes: when the worker's next register
      // reaches the runtime, before it is read (the listener runs first, on its thread).
      AtomicBoolean killed = new AtomicBoolean();
      AtomicReference<CompletableFuture<Outcome>> inWindow = new AtomicReference<>();
      try (LocalRuntime.Subscription unused =
          rt.onEvent(
              e -> {
                if (Event.end().test(e)) {
                  killed.set(true);
                } else if (killed.get()
                    && inWindow.get() == null
                    && Event.in(WorkClientMsg.BodyCase.REGISTER).test(e)) {
                  inWindow.set(rt.dispatch(Call.of("window", "s-window", "pay", "1.0.0", "{}")));
                }
              })) {
        // The crossing: forgotten by the runtime, its cancel held back, its result goes out.
        CompletableFuture<Outcome> crossed =
            rt.dispatch(Call.of("crossed", "s-crossed", "pay", "1.0.0", "{}"));
        started.of("crossed").get(10, TimeUnit.SECONDS);
        rt.cancelSession("s-crossed");
        release.of("crossed").complete(null);
        assertThat(crossed.get(10, TimeUnit.SECONDS)).isInstanceOf(Outcome.DispatchError.class);
        Await.until(
            "the killed id registered again",
            () ->
                registers(rt).stream().filter(r -> r.getWorkerId().equals("w1")).count() == 2
                    && client.registered());
      }

      running.forEach(id -> release.of(id).complete(null));
      List<Outcome> outcomes = new ArrayList<>();
      for (CompletableFuture<Outcome> f : runningOutcomes) {
        outcomes.add(f.get(10, TimeUnit.SECONDS));
      }
      assertThat(outcomes)
          .as("the 10 running calls each end with their own result, none indeterminate")
          .allSatisfy(o -> assertThat(o).isInstanceOf(Outcome.Result.class));
      assertThat(outcomes)
          .extracting(o -> new String(((Outcome.Result) o).payload()))
          .containsExactlyElementsOf(
              running.stream().map(id -> "{\"paid\":\"" + id + "\"}").toList());
      Await.until(
          "the 5 held results acked, the rescue's calls too",
          () -> outbox.pendingIds().isEmpty() && client.streamsOpen() == 1);

      Outcome lost = inWindow.get().get(10, TimeUnit.SECONDS);
      assertThat(lost)
          .as("the one call routed to the dead entry in the window fails at once")
          .isInstanceOf(Outcome.DispatchError.class);
      assertThat(((Outcome.DispatchError) lost).kind()).isEqualTo(Outcome.Kind.SEND_FAILED);

      WorkRegister rescue = registers(rt).get(1);
      assertThat(rescue.getWorkerId()).isNotEqualTo("w1");
      assertThat(rescue.getHandlersList()).as("a rescue is routed nothing").isEmpty();
      assertThat(rescue.getInFlightList())
          .extracting(WorkInFlightCall::getCallId)
          .containsExactlyInAnyOrderElementsOf(concat(held, running));
      // The killed id again, behind the hand-over on the same stream. (The rescue's own register,
      // on another stream, may be read before or after it.)
      List<Event> registerEvents =
          rt.events().stream().filter(Event.in(WorkClientMsg.BodyCase.REGISTER)).toList();
      long handOverStream = registerEvents.get(1).streamId(); // its first register: the hand-over
      List<Event> onHandOverStream =
          registerEvents.stream().filter(e -> e.streamId() == handOverStream).toList();
      assertThat(onHandOverStream)
          .extracting(e -> e.clientMsg().getRegister().getWorkerId())
          .containsExactly(rescue.getWorkerId(), "w1");
      assertThat(outbox.isOrphaned("crossed")).isTrue();

      // Served as before: the next call goes to the new registration.
      CompletableFuture<Outcome> after =
          rt.dispatch(Call.of("after", "s-after", "pay", "1.0.0", "{}"));
      release.of("after").complete(null);
      assertThat(after.get(10, TimeUnit.SECONDS)).isInstanceOf(Outcome.Result.class);
    }
  }

  @Test
  void every_crossing_is_replaced_at_once_however_many_come_in_a_row() throws Exception {
    TestHandler pay = Gates.gatedPayment(8, started, release);
    FakeScheduler timers = new FakeScheduler(); // never advanced: no backoff can pass
    try (LocalRuntime rt =
            LocalRuntime.builder().port(0).cancelDelay(Duration.ofMinutes(1)).start();
        WorkClient client =
            new WorkClient(
                WorkOptions.defaults(rt.target(), new WorkerIdentity("w1", "", "")),
                TestHandler.catalog(pay),
                new MemoryOutbox(),
                timers,
                bound -> bound / 2)) {
      client.start();
      Await.until("registered", client::registered);
      for (int kill = 1; kill <= 6; kill++) {
        String id = "crossed-" + kill;
        rt.dispatch(Call.of(id, "s-" + id, "pay", "1.0.0", "{}"));
        started.of(id).get(10, TimeUnit.SECONDS);
        rt.cancelSession("s-" + id);
        release.of(id).complete(null);
        int expected = kill + 1;
        Await.until(
            "registered again after kill " + kill + ", no time passed",
            () ->
                registers(rt).stream().filter(r -> r.getWorkerId().equals("w1")).count() == expected
                    && client.registered());
      }
      assertThat(client.reconnects()).isEqualTo(6);
    }
  }

  private static List<String> ids(String prefix, int n) {
    return IntStream.range(0, n).mapToObj(i -> prefix + "-" + i).toList();
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }

  private static List<CompletableFuture<Outcome>> dispatchAll(LocalRuntime rt, List<String> ids) {
    return ids.stream()
        .map(id -> rt.dispatch(Call.of(id, "s-" + id, "pay", "1.0.0", "{}")))
        .toList();
  }

  private static List<WorkRegister> registers(LocalRuntime rt) {
    return rt.events().stream()
        .filter(Event.in(WorkClientMsg.BodyCase.REGISTER))
        .map(e -> e.clientMsg().getRegister())
        .toList();
  }
}
