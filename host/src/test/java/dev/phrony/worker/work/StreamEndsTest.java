package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.testkit.FakeScheduler;
import io.grpc.Status;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * A killed stream's calls, handed to a rescue registration (protocol.md rule 9): every call the
 * worker runs, holds unsent or holds unacked moves, including one whose result was decided after
 * the stream ended but before its end was taken in; the call the runtime named stays orphaned;
 * running calls answer on the rescue as soon as they finish, held ones once it is registered,
 * unless the runtime acked them first.
 */
class StreamEndsTest {
  private final Gates release = new Gates();

  private final TestHandler pay =
      new TestHandler(
          "pay",
          "1.0.0",
          8,
          SideEffectClass.NON_IDEMPOTENT_WRITE,
          call -> {
            release.of(call.callId()).join();
            return ToolResult.json("{\"id\":\"" + call.callId() + "\"}");
          });
  private final MemoryOutbox outbox = new MemoryOutbox();
  private final Dispatcher d =
      TestDispatchers.of(TestHandler.catalog(pay), outbox, new FakeScheduler());

  @Test
  void every_call_of_a_killed_stream_moves_to_the_rescue_and_answers_there() throws Exception {
    FakeSink killed = new FakeSink();
    FakeSink rescue = new FakeSink();
    for (String id : new String[] {"running", "sent", "crossed", "late"}) {
      d.onInvoke(TestInvokes.invoke(id, "pay", "{}"), killed);
    }
    release.open("sent");
    release.open("crossed");
    assertThat(Set.of(resultOf(killed.next()), resultOf(killed.next())))
        .containsExactlyInAnyOrder("sent", "crossed");

    // The stream is gone; "late" finishes before its end is taken in.
    killed.live = false;
    release.open("late");
    awaitHeld("late");

    Set<String> handed =
        inContext(
            () ->
                d.handOver(
                    killed,
                    rescue,
                    Status.NOT_FOUND.withDescription("unknown call_id \"crossed\"")));
    assertThat(handed).containsExactlyInAnyOrder("running", "sent", "late");
    assertThat(outbox.isOrphaned("crossed")).as("the call the runtime named").isTrue();

    release.open("running");
    assertThat(resultOf(rescue.next()))
        .as("a running call answers on the rescue")
        .isEqualTo("running");
    rescue.assertNothingMore(); // held results wait for the rescue's registration

    d.onResultAck("sent"); // the runtime had recorded it: acked at the rescue's register
    d.onRescueRegistered(rescue);
    assertThat(resultOf(rescue.next())).isEqualTo("late");
    TestDispatchers.settle(d);
    rescue.assertNothingMore();
    assertThat(outbox.find("sent")).isEmpty();
  }

  @Test
  void a_call_that_finishes_before_its_rescue_is_open_waits_for_its_registration()
      throws Exception {
    FakeSink killed = new FakeSink();
    FakeSink rescue = new FakeSink();
    rescue.open = false; // opened only once the calls are off the dead entry
    d.onInvoke(TestInvokes.invoke("running", "pay", "{}"), killed);
    killed.live = false;
    Set<String> handed =
        inContext(() -> d.handOver(killed, rescue, Status.NOT_FOUND.withDescription("x")));
    assertThat(handed).containsExactly("running");

    release.open("running");
    awaitHeld("running");
    rescue.assertNothingMore(); // held, not sent on a stream whose register is not out yet

    rescue.open = true;
    d.onRescueRegistered(rescue);
    assertThat(resultOf(rescue.next())).isEqualTo("running");
  }

  @Test
  void a_stream_the_runtime_dropped_detaches_its_calls_instead() throws Exception {
    FakeSink lost = new FakeSink();
    d.onInvoke(TestInvokes.invoke("running", "pay", "{}"), lost);
    lost.live = false;
    d.execute(() -> d.detach(lost, Status.UNAVAILABLE));
    Set<String> listed = inContext(d::inFlightIds);
    assertThat(listed).as("advertised at the next register").containsExactly("running");
    release.open("running");
    awaitHeld("running");
    lost.assertNothingMore();
  }

  private void awaitHeld(String callId) {
    dev.phrony.worker.testkit.Await.until(callId + " held", () -> outbox.find(callId).isPresent());
    TestDispatchers.settle(d);
  }

  private <T> T inContext(Supplier<T> body) {
    CompletableFuture<T> f = new CompletableFuture<>();
    d.execute(() -> f.complete(body.get()));
    return f.join();
  }

  private static String resultOf(FakeSink.Sent sent) {
    return ((FakeSink.Result) sent).held().callId();
  }
}
