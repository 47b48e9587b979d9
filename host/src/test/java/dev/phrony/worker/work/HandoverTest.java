package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkInFlightCall;
import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Event;
import dev.phrony.worker.testkit.FakeScheduler;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.testkit.WorkerView;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A plugin reload handed over to a new generation's stream, step by step, against LocalRuntime on
 * the same fake clock as the worker's timers: leases lapse only when the test moves time.
 */
class HandoverTest {
  private static final Duration TTL = Duration.ofSeconds(10);
  private static final Duration DRAIN = Duration.ofSeconds(60);

  private final Map<String, CompletableFuture<Void>> release = new ConcurrentHashMap<>();
  private final Map<String, CompletableFuture<Void>> started = new ConcurrentHashMap<>();
  private final FakeScheduler timers = new FakeScheduler();
  private LocalRuntime rt;
  private WorkClient client;

  private CompletableFuture<Void> of(Map<String, CompletableFuture<Void>> m, String callId) {
    return m.computeIfAbsent(callId, k -> new CompletableFuture<>());
  }

  /** A handler that answers with its generation's name, blocking until released when asked to. */
  private TestHandler echo(String name, int max) {
    return new TestHandler(
        "echo",
        "1.0.0",
        max,
        SideEffectClass.READ_ONLY,
        call -> {
          of(started, call.callId()).complete(null);
          if (call.callId().startsWith("block")) {
            of(release, call.callId()).get(30, TimeUnit.SECONDS);
          }
          return ToolResult.json("{\"by\":\"" + name + "\"}");
        });
  }

  private void start(HandlerCatalog catalog, boolean leaveRoutingOnDrain) {
    rt =
        LocalRuntime.builder()
            .port(0)
            .clock(timers.clock())
            .leaseTtl(TTL)
            .queueWait(Duration.ofMinutes(5))
            .executionTimeout(Duration.ofMinutes(5))
            .start();
    client =
        new WorkClient(
            WorkOptions.defaults(rt.target(), new WorkerIdentity("w1", "", ""))
                .withDrainTimeout(DRAIN)
                .withLeaveRoutingOnDrain(leaveRoutingOnDrain),
            catalog,
            new MemoryOutbox(),
            timers,
            bound -> bound / 2);
    client.start();
    Await.until("registered", client::registered);
  }

  @AfterEach
  void close() {
    release.values().forEach(f -> f.complete(null));
    if (client != null) {
      client.close();
    }
    if (rt != null) {
      rt.close();
    }
  }

  @Test
  void the_old_stream_serves_what_still_reaches_it_and_closes_only_once_nothing_is_left_on_it()
      throws Exception {
    start(TestHandler.catalog(echo("g1", 4)), false);
    CompletableFuture<Outcome> running =
        rt.dispatch(Call.of("block-1", "s", "echo", "1.0.0", "{}"));
    of(started, "block-1").get(30, TimeUnit.SECONDS);

    // Another concurrency is another advertisement: a new generation on a stream of its own.
    CompletableFuture<Void> handedOver =
        client
            .serve(
                TestHandler.catalog(
                    echo("g2", 8),
                    TestHandler.of("fresh", 1, c -> ToolResult.json("{\"fresh\":true}"))),
                2,
                "")
            .retired();
    Await.until("generation 2 registered", () -> connected("w1.g2"));
    awaitHandedOver();
    assertThat(client.streamsOpen()).isEqualTo(2);
    assertThat(registers().get(1).getInFlightList())
        .as("a call running on the open old stream is not moved to the new id")
        .extracting(WorkInFlightCall::getCallId)
        .doesNotContain("block-1");

    // The old lease has not lapsed: the runtime still routes echo to w1, which serves it.
    Outcome onOld =
        rt.dispatch(Call.of("late", "s", "echo", "1.0.0", "{}")).get(30, TimeUnit.SECONDS);
    assertThat(onOld.text()).isEqualTo("{\"by\":\"g1\"}");
    assertThat(rt.events())
        .filteredOn(Event.about("late"))
        .filteredOn(Event.in(WorkClientMsg.BodyCase.RESULT))
        .extracting(Event::workerId)
        .containsExactly("w1");
    assertThat(rt.dispatch(Call.of("fresh", "1.0.0", "{}")).get(30, TimeUnit.SECONDS).text())
        .as("a new key is served at once")
        .isEqualTo("{\"fresh\":true}");

    // Past the lease: the old stream is out of routing, but a call still runs on it.
    advance(TTL.plus(WorkClient.LAPSE_MARGIN).plusSeconds(1));
    assertThat(rt.worker("w1")).get().extracting(WorkerView::leaseExpired).isEqualTo(true);
    assertThat(
            rt.dispatch(Call.of("next", "s", "echo", "1.0.0", "{}"))
                .get(30, TimeUnit.SECONDS)
                .text())
        .isEqualTo("{\"by\":\"g2\"}");
    assertThat(connected("w1")).as("never closed while a call runs on it").isTrue();
    assertThat(handedOver).isNotDone();

    of(release, "block-1").complete(null);
    assertThat(running.get(30, TimeUnit.SECONDS).text()).isEqualTo("{\"by\":\"g1\"}");
    handedOver.get(30, TimeUnit.SECONDS);
    Await.until("the old stream closed", () -> !connected("w1") && client.streamsOpen() == 1);
    assertThat(rt.events())
        .noneMatch(
            e -> Event.end().test(e) && e.status().getCode() == io.grpc.Status.Code.NOT_FOUND);
    assertThat(client.generation()).isEqualTo(2);
    assertThat(client.registered()).isTrue();
  }

  @Test
  void an_unacked_result_keeps_the_old_stream_open_until_the_drain_timeout() throws Exception {
    start(TestHandler.catalog(echo("g1", 4)), false);
    rt.withholdResultAcks(true);
    rt.dispatch(Call.of("quick", "s", "echo", "1.0.0", "{}"));
    Await.until(
        "its result reached the runtime",
        () ->
            rt.events().stream()
                .anyMatch(Event.about("quick").and(Event.in(WorkClientMsg.BodyCase.RESULT))));

    CompletableFuture<Void> handedOver =
        client.serve(TestHandler.catalog(echo("g2", 8)), 2, "").retired();
    Await.until("generation 2 registered", () -> connected("w1.g2"));
    awaitHandedOver();
    advance(TTL.plus(WorkClient.LAPSE_MARGIN).plusSeconds(1));
    assertThat(connected("w1")).as("never closed while a result waits for its ack").isTrue();
    assertThat(handedOver).isNotDone();

    advance(DRAIN);
    handedOver.get(30, TimeUnit.SECONDS);
    // Closed by the worker (cut, if the runtime was slow to answer its half-close): the runtime
    // drops it as soon as it reads that.
    Await.until("the old registration gone from the runtime", () -> !connected("w1"));
  }

  @Test
  void a_reload_that_advertises_the_same_sends_nothing_and_later_calls_run_the_new_code()
      throws Exception {
    start(TestHandler.catalog(echo("g1", 4)), false);
    int before = rt.events().size();
    client
        .serve(TestHandler.catalog(echo("rebuilt", 4)), 2, "")
        .retired()
        .get(30, TimeUnit.SECONDS);
    assertThat(rt.events().subList(before, rt.events().size())).as("nothing on the wire").isEmpty();
    assertThat(client.generation()).isEqualTo(1);
    assertThat(client.streamsOpen()).isEqualTo(1);
    assertThat(rt.dispatch(Call.of("echo", "1.0.0", "{}")).get(30, TimeUnit.SECONDS).text())
        .isEqualTo("{\"by\":\"rebuilt\"}");
  }

  @Test
  void new_code_with_the_same_advertisement_reaches_an_older_generation_still_in_routing()
      throws Exception {
    start(TestHandler.catalog(echo("g1", 4)), false);
    TestHandler fresh = TestHandler.of("fresh", 1, c -> ToolResult.json("{}"));
    client.serve(TestHandler.catalog(echo("g1", 4), fresh), 2, "");
    Await.until("generation 2 registered", () -> connected("w1.g2"));
    awaitHandedOver();

    // echo rebuilt with the same descriptor, while the old registration is still routed to.
    client
        .serve(TestHandler.catalog(echo("rebuilt", 4), fresh), 3, "")
        .retired()
        .get(30, TimeUnit.SECONDS);
    Outcome o =
        rt.dispatch(Call.of("on-old", "s", "echo", "1.0.0", "{}")).get(30, TimeUnit.SECONDS);
    assertThat(rt.events())
        .filteredOn(Event.about("on-old"))
        .filteredOn(Event.in(WorkClientMsg.BodyCase.RESULT))
        .extracting(Event::workerId)
        .as("the old lease still routes here")
        .containsExactly("w1");
    assertThat(o.text()).isEqualTo("{\"by\":\"rebuilt\"}");
  }

  @Test
  void a_drain_leaves_routing_first_and_serves_what_still_comes_without_refusing_it()
      throws Exception {
    start(TestHandler.catalog(echo("g1", 4)), true);
    CompletableFuture<Outcome> running =
        rt.dispatch(Call.of("block-1", "s", "echo", "1.0.0", "{}"));
    of(started, "block-1").get(30, TimeUnit.SECONDS);
    CompletableFuture<Void> drained =
        CompletableFuture.runAsync(
            () -> {
              try {
                client.drain();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
    Await.until("leaving routing", () -> !client.readiness().ready());
    Outcome during =
        rt.dispatch(Call.of("during", "s", "echo", "1.0.0", "{}")).get(30, TimeUnit.SECONDS);
    assertThat(during.text()).as("served, not nacked draining").isEqualTo("{\"by\":\"g1\"}");

    of(release, "block-1").complete(null);
    assertThat(running.get(30, TimeUnit.SECONDS).text()).isEqualTo("{\"by\":\"g1\"}");
    assertThat(drained).as("the lease has not lapsed yet").isNotDone();
    Await.until(
        "drained once the lease lapsed",
        () -> {
          advance(Duration.ofSeconds(1));
          return drained.isDone();
        });
    assertThat(rt.events()).filteredOn(Event.in(WorkClientMsg.BodyCase.NACK)).isEmpty();
    assertThat(connected("w1")).isFalse();
  }

  /**
   * Moves time a second at a time, as fast as the wire lets it: before each step, every stream
   * still heartbeating has had its last heartbeat acked (its lease renewed at the runtime, which
   * reads the same clock), so only a stream that left routing sees its lease lapse.
   */
  private void advance(Duration d) {
    for (Duration left = d; left.isPositive(); left = left.minusSeconds(1)) {
      Await.until(
          "heartbeats acked",
          () ->
              client.openStreams().stream()
                  .filter(s -> s.registered() && !s.leaving())
                  .allMatch(
                      s ->
                          s.leaseLapses()
                              .isAfter(
                                  timers
                                      .clock()
                                      .instant()
                                      .plus(TTL.dividedBy(2))
                                      .minusSeconds(1))));
      timers.advance(left.compareTo(Duration.ofSeconds(1)) < 0 ? left : Duration.ofSeconds(1));
    }
  }

  /** The streams of older generations have left routing (the new one registered and took over). */
  private void awaitHandedOver() {
    Await.until(
        "the old stream left routing",
        () -> client.openStreams().stream().anyMatch(WorkSession::leaving));
  }

  private boolean connected(String workerId) {
    return rt.worker(workerId).map(WorkerView::connected).orElse(false);
  }

  private List<dev.phrony.runtime.v1.WorkRegister> registers() {
    return rt.events().stream()
        .filter(Event.in(WorkClientMsg.BodyCase.REGISTER))
        .map(e -> e.clientMsg().getRegister())
        .toList();
  }
}
