package dev.phrony.worker.testkit;

import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkHandlerAdvertisement;
import dev.phrony.runtime.v1.WorkHeartbeat;
import dev.phrony.runtime.v1.WorkInFlightCall;
import dev.phrony.runtime.v1.WorkInvoke;
import dev.phrony.runtime.v1.WorkRegister;
import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.runtime.v1.WorkToolError;
import dev.phrony.runtime.v1.WorkToolNack;
import dev.phrony.runtime.v1.WorkToolResult;
import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A Work client that sends exactly what the test tells it to and records what it receives: a worker
 * with no logic of its own, for pinning the runtime's behaviour.
 */
final class ScriptedWorker implements AutoCloseable {

  static final Duration TIMEOUT = Duration.ofSeconds(5);

  private final LinkedBlockingQueue<WorkServerMsg> inbox = new LinkedBlockingQueue<>();
  private final List<WorkServerMsg> history = new ArrayList<>();
  private final CompletableFuture<Status> end = new CompletableFuture<>();
  private final CompletableFuture<ClientCallStreamObserver<WorkClientMsg>> started =
      new CompletableFuture<>();
  private final ClientCallStreamObserver<WorkClientMsg> out;

  private ScriptedWorker(Channel channel) {
    RuntimeGrpc.newStub(channel)
        .work(
            new ClientResponseObserver<WorkClientMsg, WorkServerMsg>() {
              @Override
              public void beforeStart(ClientCallStreamObserver<WorkClientMsg> requestStream) {
                started.complete(requestStream);
              }

              @Override
              public void onNext(WorkServerMsg msg) {
                synchronized (history) {
                  history.add(msg);
                }
                inbox.add(msg);
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
    this.out = started.join();
  }

  static ScriptedWorker open(Channel channel) {
    return new ScriptedWorker(channel);
  }

  static WorkHandlerAdvertisement handler(String tool, String version, int maxConcurrency) {
    return WorkHandlerAdvertisement.newBuilder()
        .setTool(tool)
        .setVersion(version)
        .setMaxConcurrency(maxConcurrency)
        .setContractVersion("v1")
        .setDescriptorHash("sha256:test")
        .build();
  }

  // ------------------------------------------------------------------ sending

  synchronized ScriptedWorker send(WorkClientMsg msg) {
    out.onNext(msg);
    return this;
  }

  ScriptedWorker register(
      String workerId, List<WorkHandlerAdvertisement> handlers, String... inFlight) {
    WorkRegister.Builder reg =
        WorkRegister.newBuilder()
            .setWorkerId(workerId)
            .setWorkloadIdentity("test")
            .setImageDigest("sha256:image")
            .addAllHandlers(handlers);
    for (String id : inFlight) {
      reg.addInFlight(WorkInFlightCall.newBuilder().setCallId(id));
    }
    return send(WorkClientMsg.newBuilder().setRegister(reg).build());
  }

  /** Registers with one handler {@code tool@version} of {@code max} slots. */
  ScriptedWorker register(String workerId, String tool, String version, int max) {
    return register(workerId, List.of(handler(tool, version, max)));
  }

  /** Registers and waits for {@code registered} (skipping invokes or acks that come before it). */
  ScriptedWorker registered(String workerId, String tool, String version, int max) {
    register(workerId, tool, version, max);
    awaitType(WorkServerMsg.BodyCase.REGISTERED);
    return this;
  }

  ScriptedWorker heartbeat() {
    return send(
        WorkClientMsg.newBuilder().setHeartbeat(WorkHeartbeat.getDefaultInstance()).build());
  }

  ScriptedWorker result(String callId, String json) {
    return result(callId, json.getBytes(StandardCharsets.UTF_8));
  }

  ScriptedWorker result(String callId, byte[] payload) {
    return send(
        WorkClientMsg.newBuilder()
            .setResult(
                WorkToolResult.newBuilder()
                    .setCallId(callId)
                    .setPayload(ByteString.copyFrom(payload)))
            .build());
  }

  ScriptedWorker errorResult(String callId, String code, String message) {
    return send(
        WorkClientMsg.newBuilder()
            .setResult(
                WorkToolResult.newBuilder()
                    .setCallId(callId)
                    .setError(WorkToolError.newBuilder().setCode(code).setMessage(message)))
            .build());
  }

  ScriptedWorker nack(String callId, String code, String message) {
    return send(
        WorkClientMsg.newBuilder()
            .setNack(WorkToolNack.newBuilder().setCallId(callId).setCode(code).setMessage(message))
            .build());
  }

  /** Ends the stream cleanly from the client side. */
  synchronized void halfClose() {
    out.onCompleted();
  }

  /** Breaks the stream from the client side, as a crashed or disconnected worker would. */
  synchronized void cancel() {
    out.cancel("worker gone", null);
  }

  // ------------------------------------------------------------------ receiving

  /** The next message received, in order. */
  WorkServerMsg next() {
    try {
      WorkServerMsg msg = inbox.poll(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      if (msg == null) {
        throw new AssertionError(
            "no message within "
                + TIMEOUT
                + "; received so far: "
                + received()
                + (end.isDone() ? "; stream ended " + end.join() : ""));
      }
      return msg;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /** The next message, which must be of type {@code body}. */
  WorkServerMsg expect(WorkServerMsg.BodyCase body) {
    WorkServerMsg msg = next();
    if (msg.getBodyCase() != body) {
      throw new AssertionError("expected " + body + " but got " + msg.getBodyCase() + ": " + msg);
    }
    return msg;
  }

  WorkInvoke expectInvoke() {
    return expect(WorkServerMsg.BodyCase.INVOKE).getInvoke();
  }

  /** Skips messages until one of type {@code body}. */
  WorkServerMsg awaitType(WorkServerMsg.BodyCase body) {
    while (true) {
      WorkServerMsg msg = next();
      if (msg.getBodyCase() == body) {
        return msg;
      }
    }
  }

  /** Asserts that nothing is waiting in the inbox right now. */
  void assertNothingPending() {
    if (!inbox.isEmpty()) {
      throw new AssertionError("unexpected messages: " + List.copyOf(inbox));
    }
  }

  /** Everything received so far, in order. */
  List<WorkServerMsg> received() {
    synchronized (history) {
      return List.copyOf(history);
    }
  }

  /** The stream's final status, waiting for it. */
  Status awaitEnd() {
    try {
      return end.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      throw new AssertionError(
          "stream did not end within " + TIMEOUT + "; received: " + received(), e);
    }
  }

  boolean ended() {
    return end.isDone();
  }

  @Override
  public void close() {
    if (!end.isDone()) {
      cancel();
    }
  }
}
