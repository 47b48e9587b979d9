package dev.phrony.worker.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkServerMsg.BodyCase;
import io.grpc.Status;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class RegistrationTest extends RuntimeTestSupport {

  @Test
  void registerIsAnsweredWithWorkerIdAndTheDefaultLease() {
    start();
    ScriptedWorker w = worker().register("w1", "echo", "1.0.0", 2);

    var registered = w.expect(BodyCase.REGISTERED).getRegistered();

    assertThat(registered.getWorkerId()).isEqualTo("w1");
    assertThat(registered.getLeaseTtlMs()).isEqualTo(30_000);
    WorkerView view = runtime.worker("w1").orElseThrow();
    assertThat(view.connected()).isTrue();
    assertThat(view.handlers())
        .singleElement()
        .satisfies(
            h -> {
              assertThat(h.key()).isEqualTo("echo@1.0.0");
              assertThat(h.maxConcurrency()).isEqualTo(2);
              assertThat(h.busy()).isZero();
            });
  }

  @Test
  void leaseTtlIsConfigurable() {
    start(b -> b.leaseTtl(Duration.ofSeconds(7)));
    ScriptedWorker w = worker().register("w1", "echo", "1.0.0", 1);

    assertThat(w.expect(BodyCase.REGISTERED).getRegistered().getLeaseTtlMs()).isEqualTo(7_000);
  }

  @Test
  void emptyWorkerIdEndsTheStreamInvalidArgument() {
    start();
    ScriptedWorker w = worker().register("", "echo", "1.0.0", 1);

    Status status = w.awaitEnd();

    assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(status.getDescription()).isEqualTo("worker_id is required");
    assertThat(runtime.workers()).isEmpty();
  }

  @Test
  void heartbeatBeforeRegisterEndsTheStreamFailedPrecondition() {
    start();
    Status status = worker().heartbeat().awaitEnd();

    assertThat(status.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(status.getDescription()).isEqualTo("register before heartbeat");
  }

  @Test
  void resultOrNackBeforeRegisterEndsTheStreamFailedPrecondition() {
    start();
    Status afterResult = worker().result("c1", "{}").awaitEnd();
    Status afterNack = worker().nack("c1", "busy", "no").awaitEnd();

    assertThat(afterResult.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(afterResult.getDescription()).isEqualTo("register before result");
    assertThat(afterNack.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(afterNack.getDescription()).isEqualTo("register before nack");
  }

  @Test
  void emptyClientMessageEndsTheStreamInvalidArgument() {
    start();
    Status status = worker().send(WorkClientMsg.getDefaultInstance()).awaitEnd();

    assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(status.getDescription()).isEqualTo("unknown work client message");
  }

  @Test
  void heartbeatRenewsTheLeaseToNowPlusTtlAndIsAcked() {
    ManualClock clock = new ManualClock();
    Instant t0 = clock.instant();
    start(b -> b.clock(clock).leaseTtl(Duration.ofSeconds(30)));
    ScriptedWorker w = worker().registered("w1", "echo", "1.0.0", 1);
    assertThat(runtime.worker("w1").orElseThrow().leaseExpiresAt()).isEqualTo(t0.plusSeconds(30));

    clock.advance(Duration.ofSeconds(20));
    w.heartbeat();

    w.expect(BodyCase.HEARTBEAT_ACK);
    assertThat(runtime.worker("w1").orElseThrow().leaseExpiresAt()).isEqualTo(t0.plusSeconds(50));
  }

  @Test
  void anExpiredLeaseIsPassiveTheWorkerStaysConnectedAndCanRenewIt() {
    ManualClock clock = new ManualClock();
    start(b -> b.clock(clock));
    ScriptedWorker w = worker().registered("w1", "echo", "1.0.0", 1);

    clock.advance(Duration.ofSeconds(31));

    WorkerView expired = runtime.worker("w1").orElseThrow();
    assertThat(expired.leaseExpired()).isTrue();
    assertThat(expired.connected()).isTrue();
    w.heartbeat().expect(BodyCase.HEARTBEAT_ACK); // nothing told the worker; the stream still works
    assertThat(runtime.worker("w1").orElseThrow().leaseExpired()).isFalse();
    assertThat(w.ended()).isFalse();
  }

  @Test
  void maxConcurrencyZeroCountsAsOneSlot() {
    start();
    worker().registered("w1", "echo", "1.0.0", 0);

    assertThat(runtime.worker("w1").orElseThrow().handlers().get(0).maxConcurrency()).isEqualTo(1);
  }

  @Test
  void registeringTheSameIdAgainReplacesTheRegistrationImmediately() {
    start();
    ScriptedWorker first = worker().registered("w1", "old", "1", 1);
    ScriptedWorker second = worker().register("w1", List.of(ScriptedWorker.handler("new", "1", 1)));
    second.expect(BodyCase.REGISTERED);

    assertThat(runtime.workers())
        .singleElement()
        .satisfies(
            v -> {
              assertThat(v.handlers())
                  .extracting(WorkerView.HandlerView::key)
                  .containsExactly("new@1");
              assertThat(v.streamId()).isNotEqualTo(runtime.events().get(0).streamId());
            });
    assertThat(first.ended()).isFalse(); // the runtime does not close the old stream
  }
}
