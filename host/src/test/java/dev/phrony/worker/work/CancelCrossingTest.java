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
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * What stays unavoidable: a result already on its way when the runtime forgets the call (it forgets
 * first, then sends the cancel). LocalRuntime's crossing mode holds the cancel back, as the real
 * runtime's ledger write and the wire do, so the crossing is forced: the call is forgotten, its
 * handler finishes, the result reaches a runtime that no longer knows it and the stream ends {@code
 * NOT_FOUND}. The worker then keeps that call orphaned and, at once (no backoff: the fake clock
 * never moves), opens a stream that moves the killed stream's other calls off the dead entry and
 * registers its own id again, then hands those calls to a rescue registration that answers them.
 */
class CancelCrossingTest {
  private final Gates release = new Gates();
  private final Gates started = new Gates();

  @Test
  void a_result_that_crossed_its_cancel_is_kept_and_the_stream_is_replaced_at_once()
      throws Exception {
    TestHandler pay = Gates.gatedPayment(8, started, release);
    FakeScheduler timers = new FakeScheduler();
    Instant start = timers.clock().instant();
    MemoryOutbox outbox = new MemoryOutbox();
    try (LocalRuntime rt =
            LocalRuntime.builder().port(0).cancelDelay(Duration.ofMinutes(1)).start();
        WorkClient client =
            new WorkClient(
                WorkOptions.defaults(rt.target(), new WorkerIdentity("w1", "", "")),
                TestHandler.catalog(pay),
                outbox,
                timers,
                bound -> bound / 2)) {
      client.start();
      Await.until("registered", client::registered);
      rt.dispatch(Call.of("crossed", "s1", "pay", "1.0.0", "{}"));
      CompletableFuture<dev.phrony.worker.testkit.Outcome> other =
          rt.dispatch(Call.of("other", "s2", "pay", "1.0.0", "{}"));
      started.of("crossed").get();
      started.of("other").get();

      rt.cancelSession("s1"); // forgotten now; its cancel is on its way
      release.of("crossed").complete(null);
      Await.until("the runtime ended the stream", () -> rt.events().stream().anyMatch(Event.end()));

      Await.until(
          "registered again, the call handed to a rescue, no time passed",
          () -> registers(rt).size() >= 4 && client.registered());
      assertThat(timers.clock().instant()).isEqualTo(start);
      assertThat(
              rt.events().stream()
                  .filter(Event.end())
                  .findFirst()
                  .orElseThrow()
                  .status()
                  .getDescription())
          .contains("unknown call_id \"crossed\"");
      // The replacement stream first moves the killed stream's other call off the dead entry
      // (w1.h1, no handlers), then registers w1 again on the same stream, read in that order.
      List<Event> registers = registers(rt);
      Event handOverEvent = registersAs(registers, "w1.h1").getFirst();
      WorkRegister handOver = handOverEvent.clientMsg().getRegister();
      assertThat(handOver.getHandlersList()).isEmpty();
      assertThat(inFlight(handOver)).containsExactly("other");
      Event againEvent = registersAs(registers, "w1").get(1); // the first is the killed stream's
      assertThat(againEvent.streamId()).isEqualTo(handOverEvent.streamId());
      assertThat(registers.indexOf(againEvent)).isGreaterThan(registers.indexOf(handOverEvent));
      assertThat(againEvent.clientMsg().getRegister().getInFlightList()).isEmpty();
      // Then a rescue on a stream of its own takes the call over and will answer it. It opens once
      // the hand-over is answered, so the runtime may read it before or after the w1 register
      // behind the hand-over on the other stream: only its place after the hand-over is fixed.
      Event rescueEvent = registersAs(registers, "w1.r1").getFirst();
      WorkRegister rescue = rescueEvent.clientMsg().getRegister();
      assertThat(rescueEvent.streamId()).isNotEqualTo(handOverEvent.streamId());
      assertThat(registers.indexOf(rescueEvent)).isGreaterThan(registers.indexOf(handOverEvent));
      assertThat(rescue.getHandlersList()).isEmpty();
      assertThat(inFlight(rescue)).containsExactly("other");
      // And the hand-over's registration, with no stream left, is evicted.
      Await.until("the hand-over evicted", () -> rt.worker("w1.h1").isEmpty());
      assertThat(outbox.isOrphaned("crossed")).isTrue();
      assertThat(client.dispatcher().timings().crossedOnWire()).isEqualTo(1);
      assertThat(client.dispatcher().timings().writtenAfterCancelRead()).isZero();
      release.of("other").complete(null);
      assertThat(other.get(10, java.util.concurrent.TimeUnit.SECONDS))
          .as("answered on the rescue stream")
          .isInstanceOf(dev.phrony.worker.testkit.Outcome.Result.class);
    }
  }

  private static List<String> inFlight(WorkRegister r) {
    return r.getInFlightList().stream().map(WorkInFlightCall::getCallId).toList();
  }

  /** The registers in {@code registers} as {@code workerId}, in the order the runtime read them. */
  private static List<Event> registersAs(List<Event> registers, String workerId) {
    List<Event> as =
        registers.stream()
            .filter(e -> e.clientMsg().getRegister().getWorkerId().equals(workerId))
            .toList();
    assertThat(as).as("registers as %s in %s", workerId, registers).isNotEmpty();
    return as;
  }

  private static List<Event> registers(LocalRuntime rt) {
    return rt.events().stream().filter(Event.in(WorkClientMsg.BodyCase.REGISTER)).toList();
  }
}
