package dev.phrony.worker.harness.pipeline;

import dev.phrony.worker.api.AsyncToolHandler;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.call.ArgsCheck;
import dev.phrony.worker.call.CallContext;
import dev.phrony.worker.call.CallPipeline;
import dev.phrony.worker.call.ContextClassLoader;
import dev.phrony.worker.call.InputSchemas;
import dev.phrony.worker.call.SchemaCheck;
import dev.phrony.worker.harness.CallOutcome;
import dev.phrony.worker.harness.HarnessPipeline;
import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One handler on the worker's pipeline: its input schema compiled as the worker compiles it, and
 * each call run as the worker runs it, on a virtual thread of its own with the handler's loader as
 * context loader (an {@link AsyncToolHandler} is started there, and its stage awaited).
 */
final class LoadedHandler implements HarnessPipeline.Handler {
  private static final Duration WAIT = Duration.ofMinutes(1);

  private final CallPipeline pipeline;
  private final ToolHandler handler;
  private final ClassLoader loader;
  private final Closeable owned;
  private final ToolDescriptor descriptor;
  private final ArgsCheck argsCheck;

  /**
   * @param owned closed with this (the loader the harness made for the handler, if any)
   * @throws IllegalArgumentException if the input schema cannot serve (the worker would refuse to
   *     load the plugin, naming the same reason)
   */
  LoadedHandler(CallPipeline pipeline, ToolHandler handler, ClassLoader loader, Closeable owned) {
    this.pipeline = pipeline;
    this.handler = handler;
    this.loader = loader;
    this.owned = owned;
    // as the worker serves it: a typed handler's schema generated from its record
    this.descriptor = InputSchemas.effective(handler, handler.descriptor());
    this.argsCheck = SchemaCheck.of(descriptor.inputSchema());
  }

  @Override
  public ToolDescriptor descriptor() {
    return descriptor;
  }

  @Override
  @SuppressWarnings("try")
  public CallOutcome call(String callId, String argsJson, long deadlineUnixMs) {
    ByteBuffer args = ByteBuffer.wrap(argsJson.getBytes(StandardCharsets.UTF_8));
    CallContext call =
        new CallContext(
            callId,
            "harness",
            "harness",
            1,
            descriptor.tool(),
            descriptor.version(),
            descriptor.sideEffectClass().wireName(),
            deadlineUnixMs,
            args,
            pipeline.codec());
    CallPipeline.Refusal refusal;
    try (var tccl = ContextClassLoader.swap(LoadedHandler.class.getClassLoader())) {
      refusal = pipeline.checkArgs(call.rawArgs(), argsCheck); // as the worker's own loader
    }
    if (refusal != null) {
      return new CallOutcome.Error(refusal.code(), refusal.message());
    }
    CompletableFuture<dev.phrony.worker.call.CallOutcome> outcome = new CompletableFuture<>();
    long started = System.currentTimeMillis();
    Thread thread =
        Thread.ofVirtual()
            .name("call-" + callId)
            .start(
                () -> {
                  if (handler
                      instanceof AsyncToolHandler async) { // started, then completed by its stage
                    pipeline.start(async, loader, call).thenAccept(outcome::complete);
                  } else {
                    outcome.complete(pipeline.run(handler, loader, call));
                  }
                });
    long waitMs = deadlineUnixMs > 0 ? Math.max(0, deadlineUnixMs - started) : WAIT.toMillis();
    try {
      return harnessOutcome(outcome.get(waitMs, TimeUnit.MILLISECONDS));
    } catch (TimeoutException e) {
      if (deadlineUnixMs <= 0) {
        thread.interrupt();
        throw new IllegalStateException("no outcome for " + callId + " within " + WAIT);
      }
      call.markCancelled(); // as the worker does: the handler is told (its thread interrupted,
      thread.interrupt(); // its stage cancelled), and its outcome is not awaited
      return harnessOutcome(CallPipeline.deadlineExceeded(System.currentTimeMillis() - started));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      thread.interrupt();
      throw new IllegalStateException("interrupted waiting for " + callId, e);
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    }
  }

  /** The pipeline's outcome as the harness's type, which the test's loader knows. */
  private static CallOutcome harnessOutcome(dev.phrony.worker.call.CallOutcome o) {
    return switch (o) {
      case dev.phrony.worker.call.CallOutcome.Payload p -> new CallOutcome.Payload(p.bytes());
      case dev.phrony.worker.call.CallOutcome.Error e ->
          new CallOutcome.Error(e.code(), e.message());
    };
  }

  @Override
  public void close() {
    try {
      owned.close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
