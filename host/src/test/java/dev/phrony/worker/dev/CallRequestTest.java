package dev.phrony.worker.dev;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.worker.UserErrorException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class CallRequestTest {

  @Test
  void tool_at_version_splits_and_the_version_defaults_to_default() {
    CallRequest versioned = CallRequest.of("weather.get-forecast@1.0.0", "{}", null, null);
    CallRequest plain = CallRequest.of("echo", null, " ", null);

    assertThat(versioned.tool()).isEqualTo("weather.get-forecast");
    assertThat(versioned.version()).isEqualTo("1.0.0");
    assertThat(plain.key()).isEqualTo("echo@default");
    assertThat(plain.args()).isEqualTo("{}");
    assertThat(plain.sessionId()).isNull();
  }

  @Test
  void a_malformed_key_is_a_user_error_with_the_fix() {
    assertThatThrownBy(() -> CallRequest.of("echo@", "{}", null, null))
        .isInstanceOf(UserErrorException.class)
        .hasMessage("'echo@' has an empty version: write echo@VERSION, or just echo for default");
    assertThatThrownBy(() -> CallRequest.of("a@b@c", "{}", null, null))
        .isInstanceOf(UserErrorException.class)
        .hasMessageStartingWith("version 'b@c' can never");
    assertThatThrownBy(() -> CallRequest.of("@1", "{}", null, null))
        .isInstanceOf(UserErrorException.class)
        .hasMessageStartingWith("tool is required");
  }

  @Test
  void arguments_that_are_not_json_name_their_origin_line_and_column() {
    assertThatThrownBy(() -> CallRequest.checkArgs("{\"city\":\n  Oslo}", "--args-file a.json"))
        .isInstanceOf(UserErrorException.class)
        .hasMessageStartingWith("--args-file a.json is not JSON: Unrecognized token 'Oslo'")
        .hasMessageEndingWith("at line 2, column 3");
    assertThatThrownBy(() -> CallRequest.checkArgs("{} {}", "ARGS_JSON"))
        .hasMessage("ARGS_JSON is not JSON: more text after the JSON value at line 1, column 4");
    assertThatThrownBy(() -> CallRequest.checkArgs("  ", "ARGS_JSON"))
        .hasMessage(
            "ARGS_JSON is not JSON: no JSON value (the text is empty) at line 1, " + "column 1");
  }

  @Test
  void json_whose_quotes_the_shell_ate_gets_a_hint() {
    assertThatThrownBy(() -> CallRequest.checkArgs("{city:Oslo}", "ARGS_JSON"))
        .hasMessageContaining("at line 1, column 2")
        .hasMessageEndingWith("put the JSON in single quotes: '{\"key\":\"value\"}')");
  }

  @Test
  void arguments_are_compacted_with_numbers_kept_exactly() {
    assertThat(CallRequest.checkArgs("{ \"a\" : 1.10,\n \"b\": 1e400 }", "ARGS_JSON"))
        .isEqualTo("{\"a\":1.10,\"b\":1E+400}");
    assertThat(CallRequest.checkArgs("\"just text\"", "ARGS_JSON")).isEqualTo("\"just text\"");
  }

  @Test
  void the_wire_form_round_trips() {
    CallRequest r =
        new CallRequest("echo", "2", "[1,{\"x\":null}]", "s-9", Duration.ofMillis(1500));

    String json = new String(r.toJson(), StandardCharsets.UTF_8);

    assertThat(json)
        .isEqualTo(
            "{\"tool\":\"echo\",\"version\":\"2\",\"args\":[1,{\"x\":null}],"
                + "\"session_id\":\"s-9\",\"deadline_ms\":1500}");
    assertThat(CallRequest.fromJson(r.toJson())).isEqualTo(r);
  }
}
