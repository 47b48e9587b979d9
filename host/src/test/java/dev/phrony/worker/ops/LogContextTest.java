package dev.phrony.worker.ops;

import static java.util.Map.entry;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;

/** The call's logging context, and that nothing of it outlives the call on a shared thread. */
class LogContextTest {
  @AfterEach
  void clear() {
    MDC.clear();
  }

  @Test
  void a_call_sets_its_keys_and_its_end_leaves_no_trace() {
    try (var scope = LogContext.call("c-1", "s-1", "echo@default")) {
      assertThat(MDC.getCopyOfContextMap())
          .containsOnly(
              entry("call_id", "c-1"), entry("session_id", "s-1"), entry("tool", "echo@default"));
      MDC.put("handler_key", "x"); // what a handler puts ends with its call
    }
    assertThat(MDC.getCopyOfContextMap()).isNullOrEmpty();
  }

  @Test
  void a_nested_call_restores_the_outer_context_and_keys_set_before() {
    MDC.put("request", "r-9");
    try (var outer = LogContext.call("c-1", "s-1", "echo@default")) {
      try (var inner = LogContext.call("c-2", "", null)) {
        assertThat(MDC.get("call_id")).isEqualTo("c-2");
        assertThat(MDC.get("session_id")).isNull();
        assertThat(MDC.get("tool")).isNull();
        assertThat(MDC.get("request")).isEqualTo("r-9");
      }
      assertThat(MDC.get("call_id")).isEqualTo("c-1");
      assertThat(MDC.get("session_id")).isEqualTo("s-1");
      assertThat(MDC.get("tool")).isEqualTo("echo@default");
    }
    assertThat(MDC.getCopyOfContextMap()).containsOnly(entry("request", "r-9"));
  }
}
