package dev.phrony.worker.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.runtime.v1.WorkServerMsg.BodyCase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class FlowControlTest extends RuntimeTestSupport {

  private static final int CALLS = 20_000;

  /**
   * The runtime asks the transport for inbound messages in batches and hands credit back as it
   * consumes them; a worker that pipelines thousands of results without waiting for acks must get
   * every one of them acked, in order, with nothing stuck.
   */
  @Test
  void twentyThousandPipelinedResultsAreAllAcked() {
    start(b -> b.queueWait(Duration.ofSeconds(60)));
    ScriptedWorker w = worker().registered("w1", "echo", "1", CALLS);
    Call.Sequence session = Call.sequence("bulk", "av");
    List<CompletableFuture<Outcome>> futures = new ArrayList<>(CALLS);
    for (int i = 0; i < CALLS; i++) {
      futures.add(runtime.dispatch(session.next("echo", "1", "{}")));
    }
    List<String> invoked = new ArrayList<>(CALLS);
    for (int i = 0; i < CALLS; i++) {
      invoked.add(w.expectInvoke().getCallId());
    }

    for (String callId : invoked) {
      w.result(callId, "{\"ok\":true}"); // no waiting in between
    }

    List<String> acked = new ArrayList<>(CALLS);
    for (int i = 0; i < CALLS; i++) {
      acked.add(w.expect(BodyCase.RESULT_ACK).getResultAck().getCallId());
    }
    assertThat(acked).isEqualTo(invoked);
    Set<String> completed = new HashSet<>();
    for (CompletableFuture<Outcome> f : futures) {
      completed.add(await(f).callId());
    }
    assertThat(completed).hasSize(CALLS);
    assertThat(runtime.inFlight()).isZero();
    assertThat(runtime.worker("w1").orElseThrow().busy("echo@1")).isZero();
  }
}
