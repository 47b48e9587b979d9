package dev.phrony.worker.call;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.api.AsyncToolHandler;
import dev.phrony.worker.api.ToolCall;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolException;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.api.ToolResult;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

class CallPipelineTest {
  private final JsonCodec codec = new JsonCodec();
  private final CallPipeline pipeline =
      new CallPipeline(codec, new CallPipeline.Settings(64, false));

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private CallContext call(String args) {
    return new CallContext("c1", "s1", "av", 1, "t", "1", "", 0, utf8(args), codec);
  }

  private static ToolHandler handler(ThrowingHandler body) {
    return new ToolHandler() {
      @Override
      public ToolDescriptor descriptor() {
        return ToolDescriptor.builder("t").version("1").build();
      }

      @Override
      public ToolResult handle(dev.phrony.worker.api.ToolCall call) throws Exception {
        return body.handle(call);
      }
    };
  }

  interface ThrowingHandler {
    ToolResult handle(dev.phrony.worker.api.ToolCall call) throws Exception;
  }

  private CallOutcome run(ThrowingHandler body) {
    return pipeline.run(handler(body), getClass().getClassLoader(), call("{}"));
  }

  @Test
  void an_unexpected_exception_reaches_the_model_as_a_reference_only() {
    CallOutcome out =
        run(
            c -> {
              throw new IllegalStateException("boom: database password=hunter2 unreachable");
            });
    assertThat(out)
        .isInstanceOfSatisfying(
            CallOutcome.Error.class,
            e -> {
              assertThat(e.code()).isEqualTo("internal");
              assertThat(e.message())
                  .matches("internal error \\(ref [0-9a-f]{8}\\)")
                  .doesNotContain("hunter2")
                  .doesNotContain("IllegalState");
            });
  }

  @Test
  void exposing_internal_errors_keeps_class_and_message() {
    CallPipeline dev = new CallPipeline(codec, new CallPipeline.Settings(64, true));
    CallOutcome out =
        dev.run(
            handler(
                c -> {
                  throw new IllegalStateException("boom");
                }),
            getClass().getClassLoader(),
            call("{}"));
    assertThat(((CallOutcome.Error) out).message())
        .startsWith("java.lang.IllegalStateException: boom (ref ");
  }

  @Test
  void tool_exceptions_are_the_authors_words() {
    CallOutcome out =
        run(
            c -> {
              throw new ToolException("not_found", "no such city");
            });
    assertThat(out).isEqualTo(CallOutcome.error("not_found", "no such city"));
  }

  @Test
  void results_are_encoded_and_bounded() {
    record R(String greeting) {}
    assertThat(
            new String(
                ((CallOutcome.Payload) run(c -> ToolResult.of(new R("hi")))).bytes(),
                StandardCharsets.UTF_8))
        .isEqualTo("{\"greeting\":\"hi\"}");
    assertThat(run(c -> ToolResult.text("x".repeat(65))))
        .isInstanceOfSatisfying(
            CallOutcome.Error.class, e -> assertThat(e.code()).isEqualTo("result_too_large"));
    assertThat(run(c -> ToolResult.json("{".getBytes(StandardCharsets.UTF_8))))
        .isInstanceOfSatisfying(
            CallOutcome.Error.class, e -> assertThat(e.code()).isEqualTo("internal"));
  }

  @Test
  void arguments_nested_beyond_the_parsers_limit_say_so_not_invalid_json() {
    String deep = "[".repeat(5_000) + "]".repeat(5_000);
    assertThat(pipeline.checkArgs(utf8(deep), ArgsCheck.NONE))
        .isEqualTo(
            new CallPipeline.Refusal(
                true,
                "invalid_args",
                "arguments cannot be read: nesting too deep (limit 1000 levels)"));
    String deepObject = "{\"a\":".repeat(2_000) + "1" + "}".repeat(2_000);
    assertThat(pipeline.checkArgs(utf8(deepObject), ArgsCheck.NONE).message())
        .isEqualTo("arguments cannot be read: nesting too deep (limit 1000 levels)");
    assertThat(pipeline.checkArgs(utf8("[".repeat(999) + "]".repeat(999)), ArgsCheck.NONE))
        .isNull();
  }

  @Test
  void arguments_are_refused_as_nack_when_not_json_and_as_error_when_off_schema() {
    assertThat(pipeline.checkArgs(utf8("{"), ArgsCheck.NONE))
        .isEqualTo(new CallPipeline.Refusal(true, "invalid_args", "arguments are not valid JSON"));
    assertThat(pipeline.checkArgs(utf8("{}"), ArgsCheck.NONE)).isNull();
    CallPipeline.Refusal r =
        pipeline.checkArgs(utf8("{\"city\":42}"), a -> "/city: expected string, got integer");
    assertThat(r.nack()).isFalse();
    assertThat(r.message()).endsWith("/city: expected string, got integer");
  }

  @Test
  void the_handler_runs_with_its_plugins_context_loader() {
    ClassLoader plugin = new ClassLoader(null) {};
    ClassLoader[] seen = new ClassLoader[1];
    pipeline.run(
        handler(
            c -> {
              seen[0] = Thread.currentThread().getContextClassLoader();
              return ToolResult.text("ok");
            }),
        plugin,
        call("{}"));
    assertThat(seen[0]).isSameAs(plugin);
    assertThat(Thread.currentThread().getContextClassLoader()).isNotSameAs(plugin);
  }

  private static AsyncToolHandler async(
      java.util.function.Function<ToolCall, CompletionStage<ToolResult>> body) {
    return new AsyncToolHandler() {
      @Override
      public ToolDescriptor descriptor() {
        return ToolDescriptor.builder("t").version("1").build();
      }

      @Override
      public CompletionStage<ToolResult> handleAsync(ToolCall call) {
        return body.apply(call);
      }
    };
  }

  private CompletableFuture<CallOutcome> start(
      CallContext call, java.util.function.Function<ToolCall, CompletionStage<ToolResult>> body) {
    return pipeline.start(async(body), getClass().getClassLoader(), call);
  }

  @Test
  void an_async_handler_that_completes_at_once_gives_its_outcome_at_once() {
    CompletableFuture<CallOutcome> out =
        start(call("{}"), c -> CompletableFuture.completedFuture(ToolResult.json("{\"a\":1}")));
    assertThat(out).isDone();
    assertThat(new String(((CallOutcome.Payload) out.join()).bytes(), StandardCharsets.UTF_8))
        .isEqualTo("{\"a\":1}");
  }

  @Test
  void an_async_handlers_failures_are_mapped_as_a_blocking_handlers_are() {
    assertThat(
            start(
                    call("{}"),
                    c -> {
                      throw new ToolException("not_found", "no such city");
                    })
                .join())
        .as("thrown by handleAsync")
        .isEqualTo(CallOutcome.error("not_found", "no such city"));
    assertThat(
            start(
                    call("{}"),
                    c ->
                        CompletableFuture.failedFuture(
                            new ToolException("not_found", "no such city")))
                .join())
        .as("the stage failed")
        .isEqualTo(CallOutcome.error("not_found", "no such city"));
    assertThat(
            start(
                    call("{}"),
                    c ->
                        CompletableFuture.supplyAsync(
                            () -> {
                              throw new ToolException("not_found", "late");
                            }))
                .join())
        .as("failed in a dependent stage: CompletionException unwrapped")
        .isEqualTo(CallOutcome.error("not_found", "late"));
    assertThat(
            start(
                    call("{}"),
                    c -> {
                      throw new IllegalStateException("password=hunter2");
                    })
                .join())
        .isInstanceOfSatisfying(
            CallOutcome.Error.class,
            e -> {
              assertThat(e.code()).isEqualTo("internal");
              assertThat(e.message()).doesNotContain("hunter2");
            });
    assertThat(start(call("{}"), c -> null).join())
        .as("a null stage is a bug of the handler")
        .isInstanceOfSatisfying(
            CallOutcome.Error.class, e -> assertThat(e.code()).isEqualTo("internal"));
    assertThat(
            start(
                    call("{}"),
                    c -> CompletableFuture.completedFuture(ToolResult.text("x".repeat(65))))
                .join())
        .isInstanceOfSatisfying(
            CallOutcome.Error.class, e -> assertThat(e.code()).isEqualTo("result_too_large"));
  }

  @Test
  void cancelling_the_call_cancels_the_stage_whenever_the_cancel_comes() {
    CallContext before = call("{}");
    before.markCancelled();
    CompletableFuture<ToolResult> stage1 = new CompletableFuture<>();
    CompletableFuture<CallOutcome> out1 = start(before, c -> stage1);
    assertThat(stage1).as("cancelled before the handler returned its stage").isCancelled();
    assertThat(out1.join()).isEqualTo(CallOutcome.error("cancelled", "the call was cancelled"));

    CallContext after = call("{}");
    CompletableFuture<ToolResult> stage2 = new CompletableFuture<>();
    CompletableFuture<CallOutcome> out2 = start(after, c -> stage2);
    assertThat(out2).isNotDone();
    after.markCancelled();
    assertThat(stage2).isCancelled();
    assertThat(out2.join()).isEqualTo(CallOutcome.error("cancelled", "the call was cancelled"));
  }

  @Test
  void an_async_handler_starts_and_is_encoded_with_its_plugins_context_loader() {
    ClassLoader plugin = new ClassLoader(null) {};
    ClassLoader[] seen = new ClassLoader[1];
    CompletableFuture<ToolResult> later = new CompletableFuture<>();
    CompletableFuture<CallOutcome> out =
        pipeline.start(
            async(
                c -> {
                  seen[0] = Thread.currentThread().getContextClassLoader();
                  return later;
                }),
            plugin,
            call("{}"));
    assertThat(seen[0]).isSameAs(plugin);
    assertThat(Thread.currentThread().getContextClassLoader()).isNotSameAs(plugin);
    later.complete(ToolResult.text("ok"));
    assertThat(out.join()).isInstanceOf(CallOutcome.Payload.class);
  }
}
