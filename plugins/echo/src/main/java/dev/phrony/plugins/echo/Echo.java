package dev.phrony.plugins.echo;

import dev.phrony.worker.api.AsyncToolHandler;
import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolCall;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolResult;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code echo@default}: returns its arguments unchanged. A top-level {@code "sleep_ms": N} makes it
 * answer N milliseconds later, which tests and benchmarks use to hold slots.
 *
 * <p>It reads the raw bytes and never decodes them into objects, and it never blocks: the wait is a
 * timer, not a sleeping thread, so the worker runs it on the stream's own thread (an {@link
 * AsyncToolHandler}). As cheap as a handler can be: the benchmark's no-op.
 */
public final class Echo implements AsyncToolHandler {

  private static final Pattern SLEEP = Pattern.compile("\"sleep_ms\"\\s*:\\s*(\\d{1,9})");
  private static final byte[] SLEEP_KEY = "sleep_ms".getBytes(StandardCharsets.US_ASCII);

  @Override
  public ToolDescriptor descriptor() {
    return ToolDescriptor.builder("echo")
        .sideEffectClass(SideEffectClass.READ_ONLY)
        .maxConcurrency(
            64) // an operator sets another with --handler echo@default:max-concurrency=N
        .description("Returns its arguments; optional sleep_ms delays the answer")
        .build();
  }

  @Override
  public CompletionStage<ToolResult> handleAsync(ToolCall call) {
    byte[] args = call.argsBytes();
    long sleepMs = sleepMs(args);
    ToolResult result = ToolResult.json(args);
    if (sleepMs <= 0) {
      return CompletableFuture.completedFuture(result);
    }
    // Completed by the JDK's delay thread; a cancel completes it first (the timer then finds
    // it done), and the worker cancels it when the call is cancelled or its deadline passes.
    return new CompletableFuture<ToolResult>()
        .completeOnTimeout(result, sleepMs, TimeUnit.MILLISECONDS);
  }

  private static long sleepMs(byte[] args) {
    // Cheap pre-check so the common no-sleep call builds no string and runs no regex.
    if (!contains(args, SLEEP_KEY)) {
      return 0;
    }
    Matcher m = SLEEP.matcher(new String(args, StandardCharsets.UTF_8));
    return m.find() ? Long.parseLong(m.group(1)) : 0;
  }

  private static boolean contains(byte[] haystack, byte[] needle) {
    outer:
    for (int i = 0; i <= haystack.length - needle.length; i++) {
      for (int k = 0; k < needle.length; k++) {
        if (haystack[i + k] != needle[k]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }
}
