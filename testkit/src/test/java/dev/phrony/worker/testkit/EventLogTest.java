package dev.phrony.worker.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkServerMsg.BodyCase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

class EventLogTest extends RuntimeTestSupport {

  @Test
  void everyMessageBothWaysAndEveryStreamEndIsLoggedInOrderWithItsStreamAndWorker() {
    ManualClock clock = new ManualClock();
    start(b -> b.clock(clock));
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    runtime.dispatch(Call.of("c1", "s", "echo", "1", "{}"));
    w.expectInvoke();
    w.result("c1", "{}").expect(BodyCase.RESULT_ACK);
    w.halfClose();
    w.awaitEnd();
    runtime.awaitEvent(Event.end(), TIMEOUT);

    List<Event> events = runtime.events();

    assertThat(events)
        .extracting(e -> e.direction() + " " + e.type() + " " + e.callId())
        .containsExactly(
            "IN register ",
            "OUT registered ",
            "OUT invoke c1",
            "IN result c1",
            "OUT result_ack c1",
            "END end ");
    assertThat(events).extracting(Event::workerId).containsOnly("w1");
    assertThat(events).extracting(Event::streamId).containsOnly(events.get(0).streamId());
    assertThat(events).extracting(Event::at).containsOnly(clock.instant());
    assertThat(events).extracting(Event::seq).isSorted().doesNotHaveDuplicates();
    assertThat(events.get(0).clientMsg().getRegister().getWorkerId()).isEqualTo("w1");
    assertThat(events.get(2).serverMsg().getInvoke().getCallId()).isEqualTo("c1");
    assertThat(events.get(5).status().isOk()).isTrue();
  }

  @Test
  void theLogKeepsOnlyTheLatestEventsUpToItsCapacity() {
    start(b -> b.eventLogCapacity(8));
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    for (int i = 0; i < 20; i++) {
      w.heartbeat().expect(BodyCase.HEARTBEAT_ACK);
    }
    // The runtime logs an outgoing message after writing it: the client can see it first.
    runtime.awaitEvent(e -> e.seq() == 2 + 40 - 1, Duration.ofSeconds(10));

    List<Event> events = runtime.events();

    assertThat(events).hasSize(8);
    assertThat(events.get(7).seq()).isEqualTo(events.get(0).seq() + 7);
    assertThat(events.get(7).seq())
        .isEqualTo(2 + 40 - 1); // register, registered, then 20 x (heartbeat, ack)
  }

  @Test
  void listenersSeeEveryLaterEventUntilTheyUnsubscribe() {
    start();
    List<String> seen = new CopyOnWriteArrayList<>();
    LocalRuntime.Subscription subscription =
        runtime.onEvent(e -> seen.add(e.direction() + " " + e.type()));
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);
    w.heartbeat().expect(BodyCase.HEARTBEAT_ACK);
    runtime.awaitEvent(Event.out(BodyCase.HEARTBEAT_ACK), Duration.ofSeconds(10));

    subscription.close();
    w.heartbeat().expect(BodyCase.HEARTBEAT_ACK);

    assertThat(seen)
        .containsExactly("IN register", "OUT registered", "IN heartbeat", "OUT heartbeat_ack");
  }

  @Test
  void aFailingListenerDoesNotDisturbTheRuntime() {
    start();
    runtime.onEvent(
        e -> {
          throw new IllegalStateException("listener bug");
        });

    worker().registered("w1", "echo", "1", 1).heartbeat().expect(BodyCase.HEARTBEAT_ACK);
  }

  @Test
  void awaitEventFindsPastEventsWaitsForNewOnesAndFailsWithContext() {
    start();
    ScriptedWorker w = worker().registered("w1", "echo", "1", 1);

    Event past = runtime.awaitEvent(Event.in(WorkClientMsg.BodyCase.REGISTER), TIMEOUT);
    w.heartbeat();
    Event later = runtime.awaitEvent(Event.out(BodyCase.HEARTBEAT_ACK), TIMEOUT);

    assertThat(past.seq()).isLessThan(later.seq());
    assertThatThrownBy(() -> runtime.awaitEvent(Event.out(BodyCase.CANCEL), Duration.ofMillis(50)))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("no matching event")
        .hasMessageContaining("heartbeat_ack");
  }
}
