package dev.phrony.worker.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class DurationParserTest {

  @Test
  void units_combinations_and_iso() {
    assertThat(DurationParser.parse("7d")).isEqualTo(Duration.ofDays(7));
    assertThat(DurationParser.parse("12h")).isEqualTo(Duration.ofHours(12));
    assertThat(DurationParser.parse("30m")).isEqualTo(Duration.ofMinutes(30));
    assertThat(DurationParser.parse("45s")).isEqualTo(Duration.ofSeconds(45));
    assertThat(DurationParser.parse("500ms")).isEqualTo(Duration.ofMillis(500));
    assertThat(DurationParser.parse("1h30m")).isEqualTo(Duration.ofMinutes(90));
    assertThat(DurationParser.parse(" 2D ")).isEqualTo(Duration.ofDays(2));
    assertThat(DurationParser.parse("PT30S")).isEqualTo(Duration.ofSeconds(30));
    assertThat(DurationParser.parse("p1dt2h")).isEqualTo(Duration.ofHours(26));
    assertThat(DurationParser.parse("0s")).isZero();
  }

  @Test
  void bad_values_explain_themselves() {
    assertThatThrownBy(() -> DurationParser.parse("7"))
        .hasMessageContaining("no unit")
        .hasMessageContaining("e.g. 7d");
    assertThatThrownBy(() -> DurationParser.parse("7x")).hasMessageContaining("'7x'");
    assertThatThrownBy(() -> DurationParser.parse("d7")).hasMessageContaining("'d7'");
    assertThatThrownBy(() -> DurationParser.parse("")).hasMessageContaining("required");
    assertThatThrownBy(() -> DurationParser.parse("PT-5S")).hasMessageContaining("negative");
    assertThatThrownBy(() -> DurationParser.parse("PTxS")).hasMessageContaining("ISO-8601");
    assertThatThrownBy(() -> DurationParser.parse("99999999999999999999d"))
        .hasMessageContaining("too long");
    assertThatThrownBy(() -> new DurationParser().convert("1y"))
        .isInstanceOf(picocli.CommandLine.TypeConversionException.class);
  }
}
