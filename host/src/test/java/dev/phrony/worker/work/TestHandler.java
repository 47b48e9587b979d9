package dev.phrony.worker.work;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolCall;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.plugin.HandlerCatalog;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;

/** A handler made of a lambda, counting its runs, for host tests. */
final class TestHandler implements ToolHandler {
  interface Body {
    ToolResult handle(ToolCall call) throws Exception;
  }

  final AtomicInteger runs = new AtomicInteger();
  private final ToolDescriptor descriptor;
  private final Body body;

  TestHandler(String tool, String version, int maxConcurrency, SideEffectClass sec, Body body) {
    this.descriptor =
        ToolDescriptor.builder(tool)
            .version(version)
            .maxConcurrency(maxConcurrency)
            .sideEffectClass(sec)
            .build();
    this.body = body;
  }

  /**
   * {@code pay@1.0.0}, a {@code non_idempotent_write} with 64 slots that sleeps the {@code
   * sleep_ms} of its arguments (as the Go peer worker does) and answers {@code {"paid":true}}.
   */
  static TestHandler sleepingPayment() {
    return new TestHandler(
        "pay",
        "1.0.0",
        64,
        SideEffectClass.NON_IDEMPOTENT_WRITE,
        call -> {
          long ms = Long.parseLong(new String(call.argsBytes()).replaceAll("\\D", ""));
          if (ms > 0) { // a payment that takes time, as a real one does: its behaviour
            Thread.sleep(ms);
          }
          return ToolResult.json("{\"paid\":true}");
        });
  }

  static TestHandler of(String tool, int maxConcurrency, Body body) {
    return new TestHandler(tool, "1.0.0", maxConcurrency, SideEffectClass.READ_ONLY, body);
  }

  @Override
  public ToolDescriptor descriptor() {
    return descriptor;
  }

  @Override
  public ToolResult handle(ToolCall call) throws Exception {
    runs.incrementAndGet();
    return body.handle(call);
  }

  static HandlerCatalog catalog(ToolHandler... handlers) {
    return HandlerCatalog.of(
        Arrays.stream(handlers).map(h -> HandlerCatalog.Entry.of(h, "test")).toList());
  }
}
