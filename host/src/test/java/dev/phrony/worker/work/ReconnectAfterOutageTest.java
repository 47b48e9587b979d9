package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.FakeScheduler;
import dev.phrony.worker.testkit.LocalRuntime;
import io.grpc.ConnectivityState;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * A runtime that is back is served again within a second or two, however long the worker's backoff
 * window grew while it was away. Fake time moves only from one reconnect timer to the next, and
 * every jitter draw is the worst (the top of its window).
 */
class ReconnectAfterOutageTest {
  private static final Duration OUTAGE = Duration.ofSeconds(4);

  @Test
  void a_4_s_outage_is_followed_by_a_registration_within_2_s_of_the_runtimes_return()
      throws Exception {
    ListAppender<ILoggingEvent> logs = clientLogs();
    FakeScheduler timers = new FakeScheduler();
    try (LocalRuntime rt = LocalRuntime.builder().port(0).start();
        WorkClient client =
            new WorkClient(
                WorkOptions.defaults(rt.target(), new WorkerIdentity("w1", "", ""))
                    .withBackoff(Duration.ofMillis(250), Duration.ofSeconds(30)),
                TestHandler.catalog(TestHandler.of("echo", 1, c -> ToolResult.json("{}"))),
                new MemoryOutbox(),
                timers,
                bound -> bound - 1)) {
      client.start();
      Await.until("registered", client::registered);

      rt.crash();
      Instant down = timers.clock().instant();
      Instant back = down.plus(OUTAGE);
      int ended = 0;
      while (true) { // failed tries while it is down, each at the time its backoff says
        int seen = ended;
        Await.until(
            "the try failed and the next is scheduled",
            () -> client.reconnects() > seen && !timers.dueTimes().isEmpty());
        ended = client.reconnects();
        Instant next = timers.dueTimes().getFirst();
        if (next.isAfter(back)) {
          break;
        }
        timers.advance(Duration.between(timers.clock().instant(), next));
      }
      timers.advance(Duration.between(timers.clock().instant(), back));
      rt.start(); // the same port

      while (!client.registered()) {
        // The half second of fake time before the next try is real time for the channel to
        // reconnect in (a try while it still holds the outage's failure fails at once).
        awaitQuietly(() -> client.channelState() != ConnectivityState.TRANSIENT_FAILURE);
        Instant next = timers.dueTimes().getFirst();
        timers.advance(Duration.between(timers.clock().instant(), next));
        int seen = ended;
        Await.until(
            "the try registered, or failed and the next is scheduled",
            () ->
                client.registered() || client.reconnects() > seen && !timers.dueTimes().isEmpty());
        ended = client.reconnects();
      }
      Duration unregisteredAfterReturn = Duration.between(back, timers.clock().instant());
      assertThat(unregisteredAfterReturn)
          .as("served again after the runtime came back")
          .isLessThanOrEqualTo(Duration.ofSeconds(2));
      assertThat(ended).as("it did try while the runtime was away").isGreaterThan(3);
    } finally {
      ((Logger) LoggerFactory.getLogger(WorkClient.class)).detachAppender(logs);
    }
    // Said once, with why and what to check, not once a try; and once more when it is back.
    assertThat(logs.list)
        .filteredOn(e -> e.getLevel() == Level.WARN)
        .extracting(ILoggingEvent::getFormattedMessage)
        .singleElement()
        .asString()
        .contains("cannot reach the runtime at 127.0.0.1:")
        .contains("connection refused")
        .contains("--runtime or PHRONY_RUNTIME_ADDR");
    assertThat(logs.list)
        .extracting(ILoggingEvent::getFormattedMessage)
        .filteredOn(m -> m.contains("answers again"))
        .hasSize(1);
    assertThat(logs.list)
        .filteredOn(e -> e.getLevel().isGreaterOrEqual(Level.INFO))
        .extracting(ILoggingEvent::getFormattedMessage)
        .filteredOn(m -> m.contains("reconnect in"))
        .as("no INFO line per failed try")
        .hasSizeLessThanOrEqualTo(1);
  }

  /** Collects what the client logs until detached. */
  private static ListAppender<ILoggingEvent> clientLogs() {
    ListAppender<ILoggingEvent> logs = new ListAppender<>();
    logs.start();
    ((Logger) LoggerFactory.getLogger(WorkClient.class)).addAppender(logs);
    return logs;
  }

  /** Waits up to a second for {@code condition}; goes on either way. */
  private static void awaitQuietly(java.util.function.BooleanSupplier condition) {
    try {
      Await.until("condition", condition, Duration.ofSeconds(1));
    } catch (AssertionError e) {
      // the channel had nothing to reconnect to yet: the next try shows what it does
    }
  }

  @Test
  void an_unresolvable_host_is_named_once_at_warn_and_tried_again_every_second() {
    ListAppender<ILoggingEvent> logs = clientLogs();
    FakeScheduler timers = new FakeScheduler();
    try (WorkClient client =
        new WorkClient(
            WorkOptions.defaults("no-such-runtime.invalid:7777", new WorkerIdentity("w1", "", "")),
            TestHandler.catalog(TestHandler.of("echo", 1, c -> ToolResult.json("{}"))),
            new MemoryOutbox(),
            timers,
            bound -> bound - 1)) {
      client.start();
      for (int tries = 1; tries <= 5; tries++) {
        int seen = tries;
        Await.until(
            "try " + tries + " failed",
            () -> client.reconnects() >= seen && !timers.dueTimes().isEmpty());
        Instant next = timers.dueTimes().getFirst();
        assertThat(Duration.between(timers.clock().instant(), next))
            .isLessThanOrEqualTo(WorkClient.UNREACHABLE_MAX_DELAY);
        timers.advance(Duration.between(timers.clock().instant(), next));
      }
    } finally {
      ((Logger) LoggerFactory.getLogger(WorkClient.class)).detachAppender(logs);
    }
    assertThat(logs.list)
        .filteredOn(e -> e.getLevel() == Level.WARN)
        .extracting(ILoggingEvent::getFormattedMessage)
        .singleElement()
        .asString()
        .contains("cannot reach the runtime at no-such-runtime.invalid:7777: host not found")
        .contains("--runtime or PHRONY_RUNTIME_ADDR");
  }
}
