package dev.phrony.worker.call;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolException;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.api.ToolResult;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class CallPipelineTest {
  private final JsonCodec codec = new JsonCodec();
  private final CallPipeline pipeline = new CallPipeline(codec, new CallPipeline.Settings(64, false));

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
    CallOutcome out = run(c -> {
      throw new IllegalStateException("boom: database password=hunter2 unreachable");
    });
    assertThat(out).isInstanceOfSatisfying(CallOutcome.Error.class, e -> {
      assertThat(e.code()).isEqualTo("internal");
      assertThat(e.message()).matches("internal error \\(ref [0-9a-f]{8}\\)")
          .doesNotContain("hunter2").doesNotContain("IllegalState");
    });
  }

  @Test
  void exposing_internal_errors_keeps_class_and_message() {
    CallPipeline dev = new CallPipeline(codec, new CallPipeline.Settings(64, true));
    CallOutcome out = dev.run(handler(c -> {
      throw new IllegalStateException("boom");
    }), getClass().getClassLoader(), call("{}"));
    assertThat(((CallOutcome.Error) out).message())
        .startsWith("java.lang.IllegalStateException: boom (ref ");
  }

  @Test
  void tool_exceptions_are_the_authors_words() {
    CallOutcome out = run(c -> {
      throw new ToolException("not_found", "no such city");
    });
    assertThat(out).isEqualTo(CallOutcome.error("not_found", "no such city"));
  }

  @Test
  void results_are_encoded_and_bounded() {
    record R(String greeting) {}
    assertThat(new String(((CallOutcome.Payload) run(c -> ToolResult.of(new R("hi")))).bytes(),
        StandardCharsets.UTF_8)).isEqualTo("{\"greeting\":\"hi\"}");
    assertThat(run(c -> ToolResult.text("x".repeat(65))))
        .isInstanceOfSatisfying(CallOutcome.Error.class,
            e -> assertThat(e.code()).isEqualTo("result_too_large"));
    assertThat(run(c -> ToolResult.json("{".getBytes(StandardCharsets.UTF_8))))
        .isInstanceOfSatisfying(CallOutcome.Error.class,
            e -> assertThat(e.code()).isEqualTo("internal"));
  }

  @Test
  void arguments_nested_beyond_the_parsers_limit_say_so_not_invalid_json() {
    String deep = "[".repeat(5_000) + "]".repeat(5_000);
    assertThat(pipeline.checkArgs(utf8(deep), ArgsCheck.NONE)).isEqualTo(
        new CallPipeline.Refusal(true, "invalid_args",
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
    CallPipeline.Refusal r = pipeline.checkArgs(utf8("{\"city\":42}"),
        a -> "/city: expected string, got integer");
    assertThat(r.nack()).isFalse();
    assertThat(r.message()).endsWith("/city: expected string, got integer");
  }

  @Test
  void the_handler_runs_with_its_plugins_context_loader() {
    ClassLoader plugin = new ClassLoader(null) {};
    ClassLoader[] seen = new ClassLoader[1];
    pipeline.run(handler(c -> {
      seen[0] = Thread.currentThread().getContextClassLoader();
      return ToolResult.text("ok");
    }), plugin, call("{}"));
    assertThat(seen[0]).isSameAs(plugin);
    assertThat(Thread.currentThread().getContextClassLoader()).isNotSameAs(plugin);
  }
}
