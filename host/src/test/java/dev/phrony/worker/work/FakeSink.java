package dev.phrony.worker.work;

import dev.phrony.worker.outbox.HeldResult;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** A {@link CallSink} that records what the dispatcher sends, for tests without gRPC. */
final class FakeSink implements CallSink {
  sealed interface Sent permits Result, Nack {}

  record Result(HeldResult held) implements Sent {}

  record Nack(String callId, String code, String message) implements Sent {}

  final LinkedBlockingQueue<Sent> sent = new LinkedBlockingQueue<>();
  volatile boolean live = true;

  /** False for a rescue whose stream is not opened yet: nothing may be sent on it. */
  volatile boolean open = true;

  @Override
  public boolean open() {
    return open;
  }

  @Override
  public boolean live() {
    return live;
  }

  @Override
  public boolean sendResult(HeldResult result) {
    if (!open) {
      throw new IllegalStateException("sent on a stream not opened yet");
    }
    if (live) {
      sent.add(new Result(result));
    }
    return live;
  }

  @Override
  public void sendNack(String callId, String code, String message) {
    if (live) {
      sent.add(new Nack(callId, code, message));
    }
  }

  @Override
  public boolean unsend(String callId) {
    return sent.removeIf(s -> s instanceof Result r && r.held().callId().equals(callId));
  }

  Sent next() throws InterruptedException {
    Sent s = sent.poll(10, TimeUnit.SECONDS);
    if (s == null) {
      throw new AssertionError("nothing sent within 10 s");
    }
    return s;
  }

  /** Asserts nothing was sent that has not been taken. */
  void assertNothingMore() {
    Sent s = sent.peek();
    if (s != null) {
      throw new AssertionError("unexpected " + s);
    }
  }
}
