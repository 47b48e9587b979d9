package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkInFlightCall;
import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Event;
import dev.phrony.worker.testkit.FakeScheduler;
import dev.phrony.worker.testkit.LocalRuntime;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * What stays unavoidable: a result already on its way when the runtime forgets the call (it forgets
 * first, then sends the cancel). LocalRuntime's crossing mode holds the cancel back, as the real
 * runtime's ledger write and the wire do, so the crossing is forced: the call is forgotten, its
 * handler finishes, the result reaches a runtime that no longer knows it and the stream ends {@code
 * NOT_FOUND}. The worker then keeps that call orphaned, reconnects at once (no backoff: the fake
 * clock never moves) and advertises every other call of the killed stream in {@code in_flight}.
 */
class CancelCrossingTest {
  private final Map<String, CompletableFuture<Void>> release = new ConcurrentHashMap<>();
  private final Map<String, CompletableFuture<Void>> started = new ConcurrentHashMap<>();

  private CompletableFuture<Void> of(Map<String, CompletableFuture<Void>> m, String callId) {
    return m.computeIfAbsent(callId, k -> new CompletableFuture<>());
  }

  @Test
  void a_result_that_crossed_its_cancel_is_kept_and_the_stream_is_replaced_at_once()
      throws Exception {
    TestHandler pay =
        new TestHandler(
            "pay",
            "1.0.0",
            8,
            SideEffectClass.NON_IDEMPOTENT_WRITE,
            call -> {
              of(started, call.callId()).complete(null);
              of(release, call.callId()).join();
              return ToolResult.json("{\"paid\":true}");
            });
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
      rt.dispatch(Call.of("other", "s2", "pay", "1.0.0", "{}"));
      of(started, "crossed").get();
      of(started, "other").get();

      rt.cancelSession("s1"); // forgotten now; its cancel is on its way
      of(release, "crossed").complete(null);
      Await.until("the runtime ended the stream", () -> rt.events().stream().anyMatch(Event.end()));

      Await.until(
          "registered again, no time passed",
          () -> {
            timers.advance(Duration.ZERO);
            return registers(rt).size() == 2 && client.registered();
          });
      assertThat(timers.clock().instant()).isEqualTo(start);
      assertThat(
              rt.events().stream()
                  .filter(Event.end())
                  .findFirst()
                  .orElseThrow()
                  .status()
                  .getDescription())
          .contains("unknown call_id \"crossed\"");
      assertThat(registers(rt).get(1).getRegister().getInFlightList())
          .extracting(WorkInFlightCall::getCallId)
          .containsExactly("other");
      assertThat(outbox.isOrphaned("crossed")).isTrue();
      assertThat(client.dispatcher().timings().crossedOnWire()).isEqualTo(1);
      assertThat(client.dispatcher().timings().writtenAfterCancelRead()).isZero();
      of(release, "other").complete(null);
    }
  }

  private static List<WorkClientMsg> registers(LocalRuntime rt) {
    return rt.events().stream()
        .filter(Event.in(WorkClientMsg.BodyCase.REGISTER))
        .map(Event::clientMsg)
        .toList();
  }
}
