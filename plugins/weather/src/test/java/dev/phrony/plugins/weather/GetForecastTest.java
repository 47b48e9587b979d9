package dev.phrony.plugins.weather;

import static dev.phrony.worker.harness.HandlerHarness.payloadText;
import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.harness.CallOutcome;
import dev.phrony.worker.harness.HandlerHarness;
import org.junit.jupiter.api.Test;

class GetForecastTest {
  @Test
  void the_forecast_is_deterministic_per_city() {
    try (HandlerHarness h = HandlerHarness.of(new GetForecast())) {
      String oslo = payloadText(h.call("{\"city\":\"Oslo\"}"));
      assertThat(oslo).startsWith("{\"city\":\"Oslo\",\"days\":[{\"day\":1,");
      assertThat(payloadText(h.call("{\"city\":\" Oslo \"}"))).isEqualTo(oslo);
      assertThat(payloadText(h.call("{\"city\":\"Bergen\"}")))
          .isNotEqualTo(oslo)
          .contains("\"day\":3");
    }
  }

  @Test
  void a_missing_blank_or_non_text_city_is_refused_by_the_schema_before_the_handler() {
    try (HandlerHarness h = HandlerHarness.of(new GetForecast())) {
      for (String[] c :
          new String[][] {
            {"{}", "/city: required, but missing"},
            {"{\"town\":\"Oslo\"}", "/city: required, but missing"},
            {"{\"city\":\"  \"}", "/city: does not match the regex pattern \\S"},
            {"{\"city\":42}", "/city: expected string, got integer"}
          }) {
        assertThat(h.call(c[0]))
            .isInstanceOfSatisfying(
                CallOutcome.Error.class,
                e -> {
                  assertThat(e.code()).isEqualTo("invalid_args");
                  assertThat(e.message())
                      .isEqualTo("arguments do not fit the input schema: " + c[1]);
                });
      }
    }
  }
}
