package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.call.CallContext;
import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.call.JsonCodec;
import dev.phrony.worker.outbox.HeldResult;
import dev.phrony.worker.plugin.HandlerCatalog;
import java.nio.ByteBuffer;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/**
 * A call's state machine: each transition checks where the call comes from, and the counts of
 * running calls and handlers running apart follow the transitions, so they cannot drift.
 */
class CallRecordTest {
  private final TestHandler echo = TestHandler.of("echo", 2, c -> ToolResult.json("{}"));
  private final HandlerCatalog.Entry entry = TestHandler.catalog(echo).entries().getFirst();
  private final ToolSlots slots =
      new ToolSlots(entry, 2, s -> dev.phrony.worker.ops.ToolMetrics.NONE);
  private final FakeSink sink = new FakeSink();
  private final CallTable table = new CallTable();

  private CallRecord admitted(boolean needsIntent) {
    CallRecord c = CallRecord.invoked(TestInvokes.invoke("c1", "echo", "{}"), slots, sink, table);
    c.admitted(slots.tryAcquire(), context(), Instant.EPOCH, needsIntent);
    return c;
  }

  private static CallContext context() {
    return new CallContext(
        "c1",
        "s",
        "",
        0,
        "echo",
        "1.0.0",
        "",
        0,
        ByteBuffer.wrap("{}".getBytes()),
        new JsonCodec());
  }

  private static HeldResult held() {
    return new HeldResult("c1", "s", "echo@1.0.0", "", Instant.EPOCH, CallOutcome.error("x", "y"));
  }

  @Test
  void a_call_runs_is_held_sent_and_counted_on_its_way() {
    CallRecord c = admitted(true);
    assertThat(c.state()).isEqualTo(CallRecord.State.INTENT);
    assertThat(table.running()).isEqualTo(1);
    c.intentWriting();
    c.intentDone(true);
    c.handlerStarted(entry, null);
    assertThat(c.state()).isEqualTo(CallRecord.State.RUNNING);
    c.handlerFinished();
    c.decided(held());
    c.holdDone();
    c.sent(sink);
    assertThat(c.state()).isEqualTo(CallRecord.State.SENT);
    assertThat(table.running()).isZero();
  }

  @Test
  void a_transition_the_table_does_not_allow_fails_loudly() {
    CallRecord c = admitted(false);
    c.handlerStarted(entry, null);
    assertThatThrownBy(() -> c.sent(sink)).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> c.handlerStarted(entry, null))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("starts once");
    assertThatThrownBy(c::intentWriting).isInstanceOf(IllegalStateException.class);
    c.decided(held());
    c.holdDone();
    c.unsent(sink);
    assertThatThrownBy(c::cancelled)
        .as("a held result is never cancelled back into a run")
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void a_cancel_sends_the_running_handler_apart_and_its_end_is_counted() {
    CallRecord c = admitted(false);
    c.handlerStarted(entry, null);
    assertThat(c.cancelled()).isEqualTo(CallRecord.State.RUNNING);
    assertThat(table.running()).isZero();
    assertThat(table.apart()).isEqualTo(1);
    assertThat(c.settled()).isFalse();
    assertThat(c.handlerFinished()).as("its outcome is dropped").isTrue();
    assertThat(table.apart()).isZero();
    assertThat(c.settled()).isTrue();
  }
}
