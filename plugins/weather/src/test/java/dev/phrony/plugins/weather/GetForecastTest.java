package dev.phrony.plugins.weather;

import static dev.phrony.worker.harness.HandlerHarness.payloadText;
import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.harness.HandlerHarness;
import org.junit.jupiter.api.Test;

class GetForecastTest {
  @Test
  void the_forecast_is_deterministic_per_city() {
    try (HandlerHarness h = HandlerHarness.of(new GetForecast())) {
      String oslo = payloadText(h.call("{\"city\":\"Oslo\"}"));
      assertThat(oslo).startsWith("{\"city\":\"Oslo\",\"days\":[{\"day\":1,");
      assertThat(payloadText(h.call("{\"city\":\" Oslo \"}"))).isEqualTo(oslo);
      assertThat(payloadText(h.call("{\"city\":\"Bergen\"}"))).isNotEqualTo(oslo)
          .contains("\"day\":3");
    }
  }

  @Test
  void a_missing_or_blank_city_is_invalid_args() {
    try (HandlerHarness h = HandlerHarness.of(new GetForecast())) {
      for (String args : new String[] {"{}", "{\"city\":\"  \"}", "{\"town\":\"Oslo\"}"}) {
        assertThat(h.call(args)).isInstanceOfSatisfying(CallOutcome.Error.class, e -> {
          assertThat(e.code()).isEqualTo("invalid_args");
          assertThat(e.message()).contains("city is required");
        });
      }
    }
  }
}
