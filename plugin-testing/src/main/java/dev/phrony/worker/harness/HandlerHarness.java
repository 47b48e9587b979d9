package dev.phrony.worker.harness;

import dev.phrony.worker.api.AsyncToolHandler;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.call.ArgsCheck;
import dev.phrony.worker.call.CallContext;
import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.call.CallPipeline;
import dev.phrony.worker.call.JsonCodec;
import dev.phrony.worker.call.SchemaCheck;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Runs a handler through the host's own call pipeline, without a runtime: the arguments are
 * checked as the worker checks them, the handler runs on a virtual thread of its own with its
 * classloader as context loader (an {@link AsyncToolHandler} is started there, and its stage
 * awaited), and what it returns or throws is encoded and mapped exactly as the worker would
 * send it.
 *
 * <pre>{@code
 * try (var harness = HandlerHarness.of(new GetForecast())) {
 *   CallOutcome out = harness.call("{\"city\":\"Oslo\"}");
 * }
 * }</pre>
 */
public final class HandlerHarness implements AutoCloseable {
  /** The result size the worker allows by default (the runtime's 4 MiB minus the envelope). */
  public static final int DEFAULT_MAX_RESULT_BYTES = 4 * 1024 * 1024 - 16 * 1024;
  private static final Duration WAIT = Duration.ofMinutes(1);

  private final ToolHandler handler;
  private final ToolDescriptor descriptor;
  private final CallPipeline pipeline;
  private final ArgsCheck argsCheck;
  private final AtomicLong ids = new AtomicLong();

  private HandlerHarness(ToolHandler handler, CallPipeline pipeline, ArgsCheck argsCheck) {
    this.handler = handler;
    this.descriptor = handler.descriptor();
    this.pipeline = pipeline;
    this.argsCheck = argsCheck;
  }

  /**
   * A harness for one handler instance, with the worker's default settings: arguments are
   * checked against the descriptor's input schema, compiled as the worker compiles it.
   *
   * @throws SchemaCheck.InvalidSchemaException if the input schema cannot serve (the worker
   *     would refuse to load the plugin, naming the same reason)
   */
  public static HandlerHarness of(ToolHandler handler) {
    return new HandlerHarness(handler, new CallPipeline(new JsonCodec(),
        new CallPipeline.Settings(DEFAULT_MAX_RESULT_BYTES, false)),
        SchemaCheck.of(handler.descriptor().inputSchema()));
  }

  /** Calls the handler with JSON arguments under a fresh call id and waits for the outcome. */
  public CallOutcome call(String argsJson) {
    return call("harness-call-" + ids.incrementAndGet(), argsJson, 0);
  }

  /**
   * Calls the handler as the runtime would invoke {@code callId}, with an optional deadline
   * ({@code deadlineUnixMs} 0 = none), and waits for the outcome: the payload, a tool error, or
   * a nack the worker would send (as an error with the nack's code).
   */
  public CallOutcome call(String callId, String argsJson, long deadlineUnixMs) {
    ByteBuffer args = ByteBuffer.wrap(argsJson.getBytes(StandardCharsets.UTF_8));
    CallContext call = new CallContext(callId, "harness", "harness", 1, descriptor.tool(),
        descriptor.version(), descriptor.sideEffectClass().wireName(), deadlineUnixMs, args,
        pipeline.codec());
    CallPipeline.Refusal refusal = pipeline.checkArgs(call.rawArgs(), argsCheck);
    if (refusal != null) {
      return CallOutcome.error(refusal.code(), refusal.message());
    }
    CompletableFuture<CallOutcome> outcome = new CompletableFuture<>();
    long started = System.currentTimeMillis();
    ClassLoader loader = handler.getClass().getClassLoader();
    Thread thread = Thread.ofVirtual().name("call-" + callId).start(() -> {
      if (handler instanceof AsyncToolHandler async) { // started, then completed by its stage
        pipeline.start(async, loader, call).thenAccept(outcome::complete);
      } else {
        outcome.complete(pipeline.run(handler, loader, call));
      }
    });
    long waitMs = deadlineUnixMs > 0 ? Math.max(0, deadlineUnixMs - started) : WAIT.toMillis();
    try {
      return outcome.get(waitMs, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      if (deadlineUnixMs <= 0) {
        thread.interrupt();
        throw new IllegalStateException("no outcome for " + callId + " within " + WAIT);
      }
      call.markCancelled(); // as the worker does: the handler is told (its thread interrupted,
      thread.interrupt(); // its stage cancelled), and its outcome is not awaited
      return CallPipeline.deadlineExceeded(System.currentTimeMillis() - started);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      thread.interrupt();
      throw new IllegalStateException("interrupted waiting for " + callId, e);
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
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

  @Override
  public void close() {}
}
