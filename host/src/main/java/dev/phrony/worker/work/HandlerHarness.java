package dev.phrony.worker.work;

import dev.phrony.worker.call.JsonCodec;
import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.WorkInvoke;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.outbox.HeldResult;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.plugin.HandlerCatalog;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Runs a handler exactly as the host runs it (argument decoding, result encoding, error
 * mapping, size limit, deadline), without a runtime: for plugin authors' unit tests.
 *
 * <pre>{@code
 * try (var harness = HandlerHarness.of(new GetForecast())) {
 *   CallOutcome out = harness.call("{\"city\":\"Oslo\"}");
 * }
 * }</pre>
 *
 * Add {@code phrony-worker-host} to the plugin's test dependencies to use it.
 */
public final class HandlerHarness implements AutoCloseable {
  private static final Duration WAIT = Duration.ofMinutes(1);

  private final ScheduledExecutorService timers = Executors.newSingleThreadScheduledExecutor(
      Thread.ofPlatform().daemon().name("harness-timers").factory());
  private final Dispatcher dispatcher;
  private final HandlerCatalog.Entry entry;
  private final AtomicLong ids = new AtomicLong();
  private final ConcurrentHashMap<String, CompletableFuture<CallOutcome>> waiting =
      new ConcurrentHashMap<>();
  private final CallSink sink = new CallSink() {
    @Override
    public boolean live() {
      return true;
    }

    @Override
    public void sendResult(HeldResult result) {
      complete(result.callId(), result.outcome());
    }

    @Override
    public void sendNack(String callId, String code, String message) {
      complete(callId, CallOutcome.error(code, message));
    }

    @Override
    public void unsend(String callId) {}

    @Override
    public boolean orphanWindowClosed() {
      return false;
    }
  };

  private HandlerHarness(ToolHandler handler) {
    this.entry = HandlerCatalog.Entry.of(handler, "harness");
    this.dispatcher = new Dispatcher(HandlerCatalog.of(List.of(entry)), new MemoryOutbox(),
        new JsonCodec(), WorkOptions.DEFAULT_MAX_RESULT_BYTES, InstantSource.system(), timers);
    dispatcher.attachSession(sink);
  }

  /** A harness for one handler instance. */
  public static HandlerHarness of(ToolHandler handler) {
    return new HandlerHarness(handler);
  }

  /** Calls the handler with JSON arguments under a fresh call id and waits for the outcome. */
  public CallOutcome call(String argsJson) {
    return call("harness-call-" + ids.incrementAndGet(), argsJson, 0);
  }

  /**
   * Calls the handler as the runtime would invoke {@code callId}, with an optional deadline
   * ({@code deadlineUnixMs} 0 = none), and waits for the outcome: the payload, a tool error, or
   * a nack the host would send (as an error with the nack's code).
   */
  public CallOutcome call(String callId, String argsJson, long deadlineUnixMs) {
    CompletableFuture<CallOutcome> outcome = new CompletableFuture<>();
    waiting.put(callId, outcome);
    dispatcher.onInvoke(WorkInvoke.newBuilder()
        .setCallId(callId).setSessionId("harness").setTool(entry.descriptor().tool())
        .setVersion(entry.descriptor().version())
        .setSideEffectClass(entry.descriptor().sideEffectClass().wireName())
        .setArgs(ByteString.copyFrom(argsJson, StandardCharsets.UTF_8))
        .setDeadlineUnixMs(deadlineUnixMs).build(), sink);
    try {
      return outcome.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted waiting for " + callId, e);
    } catch (Exception e) {
      throw new IllegalStateException("no outcome for " + callId + " within " + WAIT, e);
    }
  }

  /** The payload of a successful call as text, or an AssertionError naming the tool error. */
  public static String payloadText(CallOutcome outcome) {
    return switch (outcome) {
      case CallOutcome.Payload p -> new String(p.bytes(), StandardCharsets.UTF_8);
      case CallOutcome.Error e -> throw new AssertionError("tool error " + e.code() + ": "
          + e.message());
    };
  }

  private void complete(String callId, CallOutcome outcome) {
    CompletableFuture<CallOutcome> f = waiting.remove(callId);
    if (f != null) {
      dispatcher.onResultAck(callId);
      f.complete(outcome);
    }
  }

  @Override
  public void close() {
    timers.shutdownNow();
  }
}
