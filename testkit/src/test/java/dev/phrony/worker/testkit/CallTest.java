package dev.phrony.worker.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class CallTest {

  @Test
  void ofGeneratesUniqueIdsShapedLikeTheRuntimes() {
    Call a = Call.of("echo", "1.0.0", "{}");
    Call b = Call.of("echo", "1.0.0", "{}");

    assertThat(a.callId()).matches("s-[0-9a-f]{8}:av-local:1:0");
    assertThat(a.callId()).startsWith(a.sessionId() + ":");
    assertThat(b.callId()).isNotEqualTo(a.callId());
  }

  @Test
  void aSequenceNumbersCallsPerTurn() {
    Call.Sequence seq = Call.sequence("sess", "av");

    assertThat(seq.next("t", "1", "{}").callId()).isEqualTo("sess:av:1:0");
    assertThat(seq.next("t", "1", "{}").callId()).isEqualTo("sess:av:1:1");
    assertThat(seq.nextTurn().next("t", "1", "{}").callId()).isEqualTo("sess:av:2:0");
    assertThat(Call.deriveCallId("s", "a", 3, 4)).isEqualTo("s:a:3:4");
  }

  @Test
  void theRoutingKeyIsToolAtVersionOrJustTheToolWithoutOne() {
    assertThat(Call.of("c", "s", "weather", "default", "{}").key()).isEqualTo("weather@default");
    assertThat(Call.of("c", "s", "weather", "", "{}").key()).isEqualTo("weather");
  }

  @Test
  void missingArgsAreAnEmptyObjectAndIdAndToolAreRequired() {
    assertThat(Call.of("c", "s", "t", "1", null).argsText()).isEqualTo("{}");
    assertThat(Call.of("c", "s", "t", "1", "").argsText()).isEqualTo("{}");
    assertThatThrownBy(() -> Call.of(" ", "s", "t", "1", "{}"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Call.of("c", "s", "", "1", "{}"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void outcomesRenderWhatTheModelReads() {
    Outcome.Trace trace = new Outcome.Trace("c", "w1", Duration.ofMillis(3), false);

    assertThat(new Outcome.Result(new byte[0], trace).text()).isEqualTo("{}");
    assertThat(new Outcome.ToolError("bad_input", "city missing", false, trace).text())
        .isEqualTo("bad_input: city missing");
    assertThat(new Outcome.ToolError("", "only message", true, trace).text())
        .isEqualTo("only message");
    assertThat(new Outcome.ToolError("only_code", "", true, trace).text()).isEqualTo("only_code");
  }
}
