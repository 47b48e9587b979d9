package dev.phrony.worker.dev;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.AgentRef;
import dev.phrony.runtime.v1.RunSessionInteractiveClientMsg;
import dev.phrony.runtime.v1.RunSessionInteractiveServerMsg;
import dev.phrony.runtime.v1.RunSessionInteractiveStart;
import dev.phrony.runtime.v1.RunSessionInteractiveToolApproval;
import dev.phrony.runtime.v1.RunSessionInteractiveUserMessage;
import dev.phrony.runtime.v1.RuntimeGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One {@code RunSessionInteractive} stream, driven as the runtime's clients drive it, with
 * grpc-java stubs generated from the runtime's proto: events are taken one at a time, each within a
 * deadline.
 */
final class SessionClient implements AutoCloseable {
  private static final Duration WAIT = Duration.ofSeconds(20);

  private final LinkedBlockingQueue<RunSessionInteractiveServerMsg> events =
      new LinkedBlockingQueue<>();
  private final CompletableFuture<Status> end = new CompletableFuture<>();
  private final StreamObserver<RunSessionInteractiveClientMsg> requests;
  private final List<RunSessionInteractiveServerMsg.BodyCase> seen = new ArrayList<>();

  private SessionClient(ManagedChannel channel) {
    requests =
        RuntimeGrpc.newStub(channel)
            .runSessionInteractive(
                new StreamObserver<>() {
                  @Override
                  public void onNext(RunSessionInteractiveServerMsg m) {
                    events.add(m);
                  }

                  @Override
                  public void onError(Throwable t) {
                    end.complete(Status.fromThrowable(t));
                  }

                  @Override
                  public void onCompleted() {
                    end.complete(Status.OK);
                  }
                });
  }

  /** Starts a session of {@code namespace/name}. */
  static SessionClient start(ManagedChannel channel, String namespace, String name, String input) {
    SessionClient c = new SessionClient(channel);
    c.requests.onNext(
        RunSessionInteractiveClientMsg.newBuilder()
            .setStart(
                RunSessionInteractiveStart.newBuilder()
                    .setAgentRef(AgentRef.newBuilder().setNamespace(namespace).setName(name))
                    .setInput(ByteString.copyFromUtf8(input)))
            .build());
    return c;
  }

  /** Starts one of dev's call sessions ({@code call TOOL ARGS}) with {@code callJson}. */
  static SessionClient startCall(ManagedChannel channel, String callJson) {
    SessionClient c = new SessionClient(channel);
    c.requests.onNext(
        RunSessionInteractiveClientMsg.newBuilder()
            .setStart(
                RunSessionInteractiveStart.newBuilder()
                    .setAgentRef(
                        AgentRef.newBuilder().setNamespace("phrony-worker-dev").setName("call"))
                    .setInput(ByteString.copyFromUtf8(callJson)))
            .build());
    return c;
  }

  /** Attaches to session {@code id}. */
  static SessionClient attach(ManagedChannel channel, String id) {
    SessionClient c = new SessionClient(channel);
    c.requests.onNext(
        RunSessionInteractiveClientMsg.newBuilder()
            .setStart(RunSessionInteractiveStart.newBuilder().setSessionId(id))
            .build());
    return c;
  }

  /** The next event, which must be of {@code kind}. */
  RunSessionInteractiveServerMsg next(RunSessionInteractiveServerMsg.BodyCase kind) {
    RunSessionInteractiveServerMsg m;
    try {
      m = events.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
    if (m == null) {
      throw new AssertionError(
          "no " + kind + " within " + WAIT + " (events so far: " + seen + ", stream: " + end + ")");
    }
    seen.add(m.getBodyCase());
    assertThat(m.getBodyCase()).as("event after %s: %s", seen, m).isEqualTo(kind);
    return m;
  }

  void say(String text) {
    requests.onNext(
        RunSessionInteractiveClientMsg.newBuilder()
            .setUserMessage(RunSessionInteractiveUserMessage.newBuilder().setText(text))
            .build());
  }

  void decide(String approvalId, boolean approved, String comment) {
    requests.onNext(
        RunSessionInteractiveClientMsg.newBuilder()
            .setToolApproval(
                RunSessionInteractiveToolApproval.newBuilder()
                    .setApprovalId(approvalId)
                    .setApproved(approved)
                    .setComment(comment))
            .build());
  }

  /** Closes the client's side (the session completes once idle). */
  void closeSend() {
    requests.onCompleted();
  }

  /** How the stream ended, waiting for it. */
  Status ended() {
    return end.orTimeout(WAIT.toMillis(), TimeUnit.MILLISECONDS).join();
  }

  /** The events taken so far, in order. */
  List<RunSessionInteractiveServerMsg.BodyCase> seen() {
    return List.copyOf(seen);
  }

  /** No event is waiting. */
  boolean drained() {
    return events.isEmpty();
  }

  @Override
  public void close() {
    if (!end.isDone()) {
      requests.onError(Status.CANCELLED.asRuntimeException());
    }
  }
}
