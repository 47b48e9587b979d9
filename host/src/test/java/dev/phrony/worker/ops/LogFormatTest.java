package dev.phrony.worker.ops;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.LoggerContext;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.MDC;

/**
 * The shipped {@code conf/logback.xml} in both formats, loaded as {@link LogSetup} loads it, into a
 * logger context of the test's own (the global one stays as it was).
 */
class LogFormatTest {
  private final LoggerContext ctx = new LoggerContext();
  private final ByteArrayOutputStream captured = new ByteArrayOutputStream();
  private PrintStream stderr;

  @BeforeEach
  void captureStderr() {
    ctx.setMDCAdapter(MDC.getMDCAdapter());
    stderr = System.err;
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
  }

  @AfterEach
  void restore() {
    System.setErr(stderr);
    ctx.stop();
    MDC.clear();
  }

  private List<String> logSomeLines(LogFormat format, LogLevel level) throws Exception {
    LogSetup.configure(ctx, Path.of("..", "conf", "logback.xml").toUri().toURL(), format, level);
    Logger log = ctx.getLogger("dev.phrony.worker.work.Dispatcher");
    log.info("connecting to {} (stream {})", "127.0.0.1:7777", 1);
    try (var call = LogContext.call("c-1", "s 1", "echo@default")) {
      log.debug("nack {}: {}", "draining", "worker is draining; retry \"elsewhere\"");
      log.warn("handler failed", new IllegalStateException("boom\nsecond line"));
    }
    log.trace("not at this level");
    ctx.getLogger("io.grpc.netty.NettyClientHandler").info("transport chatter");
    return captured.toString(StandardCharsets.UTF_8).lines().toList();
  }

  @Test
  void text_is_one_key_value_line_per_event_with_the_call_context() throws Exception {
    List<String> lines = logSomeLines(LogFormat.text, LogLevel.DEBUG);

    assertThat(lines).hasSize(3);
    assertThat(lines.get(0))
        .matches(
            "ts=\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z"
                + " level=INFO logger=Dispatcher thread=\\S+ msg=\"connecting to 127.0.0.1:7777"
                + " \\(stream 1\\)\"");
    assertThat(lines.get(1))
        .contains(" level=DEBUG logger=Dispatcher ")
        .contains(
            " call_id=c-1 session_id=\"s 1\" tool=echo@default msg=\"nack draining:"
                + " worker is draining; retry \\\"elsewhere\\\"\"");
    assertThat(lines.get(2))
        .contains(" level=WARN ")
        .contains(" call_id=c-1 ")
        .contains(" error=\"java.lang.IllegalStateException: boom\\nsecond line\"")
        .contains(" stack=\"java.lang.IllegalStateException: boom\\nsecond line\\n\\tat ");
  }

  @Test
  void json_is_one_object_per_line_with_the_call_context_as_fields() throws Exception {
    List<String> lines = logSomeLines(LogFormat.json, LogLevel.DEBUG);

    assertThat(lines).hasSize(3);
    ObjectMapper json = new ObjectMapper();
    JsonNode first = json.readTree(lines.get(0));
    assertThat(first.get("msg").asText()).isEqualTo("connecting to 127.0.0.1:7777 (stream 1)");
    assertThat(first.get("level").asText()).isEqualTo("INFO");
    assertThat(first.get("logger").asText()).isEqualTo("dev.phrony.worker.work.Dispatcher");
    assertThat(first.get("ts").asText()).matches("\\d{4}-\\d\\d-\\d\\dT.*Z");
    assertThat(first.has("call_id")).isFalse();

    JsonNode nack = json.readTree(lines.get(1));
    assertThat(nack.get("call_id").asText()).isEqualTo("c-1");
    assertThat(nack.get("session_id").asText()).isEqualTo("s 1");
    assertThat(nack.get("tool").asText()).isEqualTo("echo@default");
    assertThat(nack.get("msg").asText())
        .isEqualTo("nack draining: worker is draining; retry \"elsewhere\"");

    JsonNode failed = json.readTree(lines.get(2));
    assertThat(failed.get("stack").asText())
        .startsWith("java.lang.IllegalStateException: boom\nsecond line");
  }

  @Test
  void the_level_is_a_threshold() throws Exception {
    List<String> lines = logSomeLines(LogFormat.text, LogLevel.WARN);
    assertThat(lines).hasSize(1);
    assertThat(lines.get(0)).contains(" level=WARN ");
  }

  @Test
  void c1_controls_and_bidi_overrides_never_reach_the_terminal_raw() throws Exception {
    for (LogFormat format : LogFormat.values()) {
      captured.reset();
      LogSetup.configure(
          ctx, Path.of("..", "conf", "logback.xml").toUri().toURL(), format, LogLevel.INFO);
      try (var call = LogContext.call("c\u009b2J\u202e1", "s-1", "echo@default")) {
        ctx.getLogger("x").info("call {} done", "id\u202egnp\u001b[0m\u0085");
      }
      String out = captured.toString(StandardCharsets.UTF_8);
      assertThat(out)
          .as(format.name())
          .doesNotContain("\u009b", "\u202e", "\u001b", "\u0085")
          .contains("\\u009b2J\\u202e1") // JSON writes \\u001B, text \\u001b
          .containsIgnoringCase("id\\u202egnp\\u001b[0m\\u0085");
    }
  }
}
