package dev.phrony.plugins.echo;

import static dev.phrony.worker.harness.HandlerHarness.payloadText;
import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.harness.CallOutcome;
import dev.phrony.worker.harness.HandlerHarness;
import org.junit.jupiter.api.Test;

class EchoTest {
  /** A deadline long past (Unix ms), whatever the clock says. */
  private static final long PASSED_DEADLINE = 1_000L;

  @Test
  void returns_its_arguments_byte_for_byte() {
    try (HandlerHarness h = HandlerHarness.of(new Echo())) {
      assertThat(payloadText(h.call("{}"))).isEqualTo("{}");
      String args = "{ \"a\" : [1, 2, {\"b\": \"ü\"}] }";
      assertThat(payloadText(h.call(args))).isEqualTo(args);
    }
  }

  @Test
  void sleep_ms_waits_and_is_interruptible() {
    try (HandlerHarness h = HandlerHarness.of(new Echo())) {
      assertThat(payloadText(h.call("{\"sleep_ms\": 20, \"x\": 1}")))
          .isEqualTo("{\"sleep_ms\": 20, \"x\": 1}");
      // A deadline already passed when the call starts (no real time waited for): the 60 s
      // sleep is cut at once and the call ends as the deadline says.
      CallOutcome cut = h.call("c", "{\"sleep_ms\": 60000}", PASSED_DEADLINE);
      assertThat(cut)
          .isInstanceOfSatisfying(
              CallOutcome.Error.class, e -> assertThat(e.code()).isEqualTo("deadline_exceeded"));
    }
  }

  @Test
  void serves_echo_at_the_default_version_read_only() {
    var d = new Echo().descriptor();
    assertThat(d.key()).isEqualTo("echo@default");
    assertThat(d.sideEffectClass().wireName()).isEqualTo("read_only");
  }
}
