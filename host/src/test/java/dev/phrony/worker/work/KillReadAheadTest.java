package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.runtime.v1.WorkRegistered;
import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.runtime.v1.WorkToolCancel;
import dev.phrony.worker.call.CallPipeline;
import dev.phrony.worker.call.JsonCodec;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.FakeScheduler;
import io.grpc.Status;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A kill is acted on as soon as gRPC delivers the stream's end, ahead of the stream's earlier
 * messages still waiting on the I/O thread (protocol.md, "A stream the runtime kills"): every call
 * the runtime routes to the dead entry until it is replaced fails, so the replacement's registers
 * must not wait behind them. Driven by hand: the registrations and the dispatcher as the worker
 * wires them, the I/O thread a queue this test runs when it chooses, the gRPC streams fakes that
 * keep what is written on them.
 */
class KillReadAheadTest {
  private final Gates started = new Gates();
  private final Gates release = new Gates();
  private final Queue<Runnable> ioThread = new ArrayDeque<>();
  private final List<WorkSession> sessions = new ArrayList<>();
  private final List<CancelWinsTest.RecordingCall> wires = new ArrayList<>();

  @Test
  void the_replacement_registers_before_the_killed_streams_earlier_messages_are_handled()
      throws Exception {
    FakeScheduler timers = new FakeScheduler();
    Dispatcher d =
        new Dispatcher(
            TestHandler.catalog(Gates.gatedPayment(8, started, release)),
            new MemoryOutbox(),
            new CallPipeline(new JsonCodec(), new CallPipeline.Settings(1 << 20, false)),
            timers);
    WorkOptions options = WorkOptions.defaults("localhost:1", new WorkerIdentity("w1", "", ""));
    Registrations regs =
        new Registrations(
            options,
            d,
            streams(d, timers),
            timers,
            new Reconnects(
                new Backoff(options.backoffInitial(), options.backoffMax(), b -> b / 2),
                options.target(),
                timers.clock()),
            WorkerMetrics.NONE);
    regs.start();
    WorkSession s1 = sessions.get(0);
    s1.onNext(registered("w1"));
    s1.onNext(TestInvokes.invoke("a", "pay", "{}"));
    s1.onNext(TestInvokes.invoke("b", "pay", "{}"));
    s1.onNext(TestInvokes.invoke("acked", "pay", "{}"));
    s1.onNext(TestInvokes.invoke("cancelled", "pay", "{}"));
    runIoThread();
    for (String id : List.of("a", "b", "acked", "cancelled")) {
      started.of(id).get(10, TimeUnit.SECONDS);
    }
    release.open("acked");
    Await.until("acked's result written", () -> sent(wires.get(0)).contains("result acked"));

    // One socket read: an ack, a cancel, an invoke, then the end. None of it handled yet.
    s1.onNext(new Inbound.ResultAck("acked"));
    s1.onNext(
        new Inbound.Other(
            WorkServerMsg.newBuilder()
                .setCancel(WorkToolCancel.newBuilder().setCallId("cancelled"))
                .build()));
    s1.onNext(TestInvokes.invoke("c", "pay", "{}"));
    s1.onError(
        Status.NOT_FOUND.withDescription("unknown call_id \"crossed\"").asRuntimeException());

    assertThat(sessions)
        .as("the replacement is open while the killed stream's last read still waits ")
        .hasSize(3);
    assertThat(sent(wires.get(1)))
        .as("its hand-over lists what the stream read (no acked, cancelled or unknown call)")
        .containsExactly(
            "register w1.h1 handlers=0 in_flight=[a, b, c]",
            "register w1 handlers=1" + " in_flight=[]");
    assertThat(s1.live()).as("its end not taken in yet").isTrue();

    runIoThread(); // the read is handled, then the end: a, b and c go to the rescue
    assertThat(s1.live()).isFalse();
    started.of("c").get(10, TimeUnit.SECONDS);
    WorkSession rescue = sessions.get(1); // made first, opened last
    WorkSession replacement = sessions.get(2);
    replacement.onNext(registered("w1.h1"));
    replacement.onNext(registered("w1"));
    runIoThread();
    assertThat(sent(wires.get(2)))
        .as("the rescue opens once the hand-over is answered, with the calls the worker still has")
        .containsExactly("register w1.r1 handlers=0 in_flight=[a, b, c]");
    rescue.onNext(registered("w1.r1"));
    runIoThread();
    assertThat(sent(wires.get(3)))
        .as("the hand-over's registration evicted")
        .containsExactly("register w1.h1 handlers=0 in_flight=[]");

    List.of("a", "b", "c", "cancelled").forEach(release::open);
    Await.until(
        "a, b and c answered on the rescue",
        () -> sent(wires.get(2)).containsAll(List.of("result a", "result b", "result c")));
    assertThat(sent(wires.get(1))).noneMatch(m -> m.startsWith("result"));
    assertThat(sent(wires.get(0))).doesNotContain("result cancelled");
  }

  private void runIoThread() {
    for (Runnable r; (r = ioThread.poll()) != null; ) {
      r.run();
    }
  }

  private Registrations.Streams streams(Dispatcher d, FakeScheduler timers) {
    return new Registrations.Streams() {
      @Override
      public WorkSession create(HandlerSet handlers, WorkerIdentity identity) {
        WorkSession s =
            new WorkSession(
                sessions.size() + 1,
                handlers,
                d,
                identity,
                timers,
                WorkerMetrics.NONE,
                Runnable::run,
                ioThread::add);
        sessions.add(s);
        return s;
      }

      @Override
      public void open(WorkSession s, Set<String> inFlight, WorkSession.HandOver first) {
        CancelWinsTest.RecordingCall w = new CancelWinsTest.RecordingCall();
        wires.add(w);
        s.beforeStart(w);
        s.register(inFlight, first);
      }

      @Override
      public void watch(WorkSession s) {}
    };
  }

  private static Inbound registered(String workerId) {
    return new Inbound.Other(
        WorkServerMsg.newBuilder()
            .setRegistered(WorkRegistered.newBuilder().setWorkerId(workerId).setLeaseTtlMs(4_000))
            .build());
  }

  /** What {@code call} was given to write, a line each. */
  private static List<String> sent(CancelWinsTest.RecordingCall call) {
    return call.written.stream()
        .map(
            m ->
                switch (m) {
                  case Outbound.Result r -> "result " + r.callId();
                  case Outbound.Proto p when p.msg().hasRegister() ->
                      "register "
                          + p.msg().getRegister().getWorkerId()
                          + " handlers="
                          + p.msg().getRegister().getHandlersCount()
                          + " in_flight="
                          + p.msg().getRegister().getInFlightList().stream()
                              .map(c -> c.getCallId())
                              .sorted()
                              .toList();
                  case Outbound.Proto p -> p.msg().getBodyCase().name().toLowerCase();
                })
        .toList();
  }
}
