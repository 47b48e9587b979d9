package dev.phrony.plugins.echo;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolCall;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.api.ToolResult;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code echo@default}: returns its arguments unchanged. A top-level {@code "sleep_ms": N} makes
 * it wait N milliseconds first (interruptibly), which tests and benchmarks use to hold slots.
 *
 * <p>It reads the raw bytes and never decodes them into objects, so it is as cheap as a handler
 * can be: the benchmark's no-op.
 */
public final class Echo implements ToolHandler {

  private static final Pattern SLEEP = Pattern.compile("\"sleep_ms\"\\s*:\\s*(\\d{1,9})");
  private static final byte[] SLEEP_KEY = "sleep_ms".getBytes(StandardCharsets.US_ASCII);

  @Override
  public ToolDescriptor descriptor() {
    return ToolDescriptor.builder("echo")
        .sideEffectClass(SideEffectClass.READ_ONLY)
        .maxConcurrency(64) // an operator sets another with --handler echo@default:max-concurrency=N
        .description("Returns its arguments; optional sleep_ms delays the answer")
        .build();
  }

  @Override
  public ToolResult handle(ToolCall call) throws InterruptedException {
    byte[] args = call.argsBytes();
    long sleepMs = sleepMs(args);
    if (sleepMs > 0) {
      Thread.sleep(sleepMs);
    }
    return ToolResult.json(args);
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
