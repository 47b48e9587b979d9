package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.runtime.v1.WorkHeartbeatAck;
import dev.phrony.runtime.v1.WorkInvoke;
import dev.phrony.runtime.v1.WorkRegistered;
import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.runtime.v1.WorkToolCancel;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.call.CallPipeline;
import dev.phrony.worker.call.JsonCodec;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.testkit.FakeScheduler;
import io.grpc.stub.ClientCallStreamObserver;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.junit.jupiter.api.Test;

/**
 * A cancel the worker has read always wins over its call's result, whatever waits where. The
 * stream's event loop is a queue this test runs by hand, so each interleaving is forced, not hoped
 * for: the cancel arrives in one read behind a slice's worth of other messages, and the handler
 * finishes (on another thread, as a timer or the outbox writer would complete it) before the loop
 * has got to the cancel. Before the cancel took effect at read time, the result was written by a
 * drain queued ahead of the cancel's slice, and the real runtime ended the stream NOT_FOUND.
 */
class CancelWinsTest {

  /** The stream's event loop, run by the test. */
  static final class ManualLoop implements Executor {
    private final ArrayDeque<Runnable> tasks = new ArrayDeque<>();
    private boolean running;

    @Override
    public synchronized void execute(Runnable task) {
      tasks.add(task);
    }

    boolean inLoop() {
      return running;
    }

    /** Where the worker drains a stream's writes: at once on the loop, else as a task. */
    void write(Runnable drain) {
      if (running) {
        drain.run();
      } else {
        execute(drain);
      }
    }

    /** Runs every task, those queued meanwhile too, in order. */
    void runAll() {
      Runnable t;
      while ((t = poll()) != null) {
        running = true;
        try {
          t.run();
        } finally {
          running = false;
        }
      }
    }

    private synchronized Runnable poll() {
      return tasks.poll();
    }
  }

  /**
   * The outbound side of the call as gRPC gives it: always ready, records what is written (from any
   * thread).
   */
  static final class RecordingCall extends ClientCallStreamObserver<Outbound> {
    final List<Outbound> written = new java.util.concurrent.CopyOnWriteArrayList<>();
    int requested;

    @Override
    public boolean isReady() {
      return true;
    }

    @Override
    public void setOnReadyHandler(Runnable r) {}

    @Override
    public void disableAutoInboundFlowControl() {}

    @Override
    public void disableAutoRequestWithInitial(int n) {
      requested += n;
    }

    @Override
    public void request(int n) {
      requested += n;
    }

    @Override
    public void setMessageCompression(boolean enable) {}

    @Override
    public void cancel(String message, Throwable cause) {}

    @Override
    public void onNext(Outbound value) {
      written.add(value);
    }

    @Override
    public void onError(Throwable t) {}

    @Override
    public void onCompleted() {}

    List<String> answered() {
      return written.stream()
          .map(Outbound::resultOrNackCallId)
          .filter(java.util.Objects::nonNull)
          .toList();
    }
  }

  private final ManualLoop loop = new ManualLoop();
  private final FakeScheduler timers = new FakeScheduler();
  private final RecordingCall call = new RecordingCall();
  private final List<CompletableFuture<ToolResult>> pending = new ArrayList<>();
  private final AsyncDispatchTest.AsyncHandler handler =
      new AsyncDispatchTest.AsyncHandler(
          c -> {
            CompletableFuture<ToolResult> f = new CompletableFuture<>();
            pending.add(f);
            return f;
          });
  private final Dispatcher dispatcher =
      new Dispatcher(
          TestHandler.catalog(handler),
          new MemoryOutbox(),
          new CallPipeline(new JsonCodec(), new CallPipeline.Settings(1 << 20, false)),
          timers,
          WorkerMetrics.NONE,
          loop::inLoop,
          loop);
  private final WorkSession session =
      new WorkSession(
          1,
          dispatcher.initialHandlers(),
          dispatcher,
          new WorkerIdentity("w1", "", ""),
          timers,
          WorkerMetrics.NONE,
          loop::write,
          loop);

  @Test
  void a_result_finished_after_its_cancel_was_read_behind_a_slice_is_never_written() {
    open();
    deliver(invoke("c1"));
    loop.runAll();
    assertThat(pending).as("the handler started").hasSize(1);

    // One read: more messages than a slice handles, then the cancel.
    for (int i = 0; i < InboundSlices.FIRST_SLICE * 2; i++) {
      deliver(
          WorkServerMsg.newBuilder()
              .setHeartbeatAck(WorkHeartbeatAck.getDefaultInstance())
              .build());
    }
    deliver(
        WorkServerMsg.newBuilder().setCancel(WorkToolCancel.newBuilder().setCallId("c1")).build());
    // The handler finishes on another thread before the loop has handled the cancel.
    pending.get(0).complete(ToolResult.json("{\"paid\":true}"));
    loop.runAll();

    assertThat(call.answered()).as("answers written").doesNotContain("c1");
    assertThat(dispatcher.busy("a@1.0.0")).as("slots taken").isZero();
    assertThat(dispatcher.runningCount()).isZero();
  }

  @Test
  void a_call_invoked_again_after_its_cancel_is_answered_again() {
    open();
    deliver(invoke("c1"));
    deliver(
        WorkServerMsg.newBuilder().setCancel(WorkToolCancel.newBuilder().setCallId("c1")).build());
    loop.runAll();
    // A new attempt of the same call id, after the cancel was taken in: its answer goes out.
    deliver(invoke("c1"));
    loop.runAll();
    pending.get(pending.size() - 1).complete(ToolResult.json("{}"));
    loop.runAll();

    assertThat(call.answered()).containsExactly("c1");
  }

  @Test
  void flow_control_credit_follows_what_is_received_not_what_is_handled() {
    open();
    int before = call.requested;
    for (int i = 0; i < WorkSession.INBOUND_BATCH / 2; i++) {
      deliver(
          WorkServerMsg.newBuilder()
              .setHeartbeatAck(WorkHeartbeatAck.getDefaultInstance())
              .build());
    }
    // Nothing handled yet (the loop has not run), and the credit is topped up all the same, so a
    // cancel behind these messages is delivered as soon as its bytes arrive.
    assertThat(call.requested - before).isEqualTo(WorkSession.INBOUND_BATCH / 2);
  }

  private void open() {
    session.beforeStart(call);
    session.register(Set.of(), null);
    deliver(
        WorkServerMsg.newBuilder()
            .setRegistered(WorkRegistered.newBuilder().setWorkerId("w1").setLeaseTtlMs(30_000))
            .build());
    loop.runAll();
  }

  private void deliver(WorkServerMsg msg) {
    session.onNext(Inbound.of(msg));
  }

  private static WorkServerMsg invoke(String callId) {
    return WorkServerMsg.newBuilder()
        .setInvoke(
            WorkInvoke.newBuilder()
                .setCallId(callId)
                .setSessionId("s")
                .setTool("a")
                .setVersion("1.0.0")
                .setArgs(com.google.protobuf.ByteString.copyFromUtf8("{}")))
        .build();
  }
}
