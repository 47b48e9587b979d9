package dev.phrony.worker.warmup;

import dev.phrony.worker.api.AsyncToolHandler;
import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolCall;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.api.TypedToolHandler;
import dev.phrony.worker.plugin.HandlerCatalog;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The warm-up's own handlers, built in: never an operator's (a plugin's handler may have side
 * effects). They cover the kinds of call path a plugin's handler takes: an async handler answered
 * on the stream's thread, read-only and durable (a write, and a non-idempotent write with its
 * intent); a typed handler (schema check, JSON in and out) on a handler thread.
 */
final class WarmUpTools {
  static final int SLOTS = 64;

  static final String ECHO = "phrony.warm-up.echo";
  static final String ECHO_TOO = "phrony.warm-up.echo-too";
  static final String TYPED = "phrony.warm-up.typed";
  static final String WRITE = "phrony.warm-up.write";
  static final String INTENT = "phrony.warm-up.intent";

  private WarmUpTools() {}

  static HandlerCatalog catalog() {
    return HandlerCatalog.of(
        List.of(
            entry(new Echo(ECHO, SideEffectClass.READ_ONLY)),
            entry(new EchoToo(ECHO_TOO, SideEffectClass.READ_ONLY)),
            entry(new Typed()),
            entry(new Write(WRITE, SideEffectClass.IDEMPOTENT_WRITE)),
            entry(new Write(INTENT, SideEffectClass.NON_IDEMPOTENT_WRITE))));
  }

  private static HandlerCatalog.Entry entry(ToolHandler h) {
    return HandlerCatalog.Entry.of(h, "built-in warm-up");
  }

  /** Answers with its arguments, as the no-op of a benchmark does. */
  private abstract static class NoOp implements AsyncToolHandler {
    private final ToolDescriptor descriptor;

    NoOp(String tool, SideEffectClass sideEffect) {
      descriptor =
          ToolDescriptor.builder(tool).sideEffectClass(sideEffect).maxConcurrency(SLOTS).build();
    }

    @Override
    public ToolDescriptor descriptor() {
      return descriptor;
    }

    @Override
    public CompletionStage<ToolResult> handleAsync(ToolCall call) {
      return CompletableFuture.completedFuture(ToolResult.json(call.argsBytes()));
    }
  }

  // Three classes, none of them most of the calls: the JIT then compiles the worker's call to a
  // handler as a call to any class, not inlined for one of these with a guard that the plugin's
  // own class would fail (a deoptimisation and a recompile under the real load).

  private static final class Echo extends NoOp {
    Echo(String tool, SideEffectClass sideEffect) {
      super(tool, sideEffect);
    }
  }

  private static final class EchoToo extends NoOp {
    EchoToo(String tool, SideEffectClass sideEffect) {
      super(tool, sideEffect);
    }
  }

  private static final class Write extends NoOp {
    Write(String tool, SideEffectClass sideEffect) {
      super(tool, sideEffect);
    }
  }

  /** Typed arguments and result: the worker checks, decodes and encodes them. */
  static final class Typed extends TypedToolHandler<Typed.Args, Typed.Answer> {
    public record Args(String city, int days) {}

    public record Answer(String city, List<Integer> days) {}

    Typed() {
      super(Args.class);
    }

    @Override
    public ToolDescriptor descriptor() {
      return ToolDescriptor.builder(TYPED)
          .sideEffectClass(SideEffectClass.READ_ONLY)
          .maxConcurrency(SLOTS)
          .build();
    }

    @Override
    protected Answer handle(Args args, ToolCall call) {
      return new Answer(args.city(), List.of(args.days(), args.days() + 1));
    }
  }
}
