package dev.phrony.worker.plugin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolDescriptor;
import org.junit.jupiter.api.Test;

class DescriptorHashTest {

  private static ToolDescriptor.Builder forecast(String schema) {
    return ToolDescriptor.builder("weather.get-forecast")
        .version("1.0.0")
        .contractVersion("2")
        .sideEffectClass(SideEffectClass.READ_ONLY)
        .maxConcurrency(32)
        .description("Three-day forecast")
        .inputSchema(schema);
  }

  private static final String SCHEMA =
      "{\"type\":\"object\",\"required\":[\"city\"],\"properties\":{\"city\":{\"type\":\"string\"}}}";

  @Test
  void is_pinned_for_a_fixed_descriptor() {
    // Computed once, and checked outside Java as SHA-256 of the canonical text
    // {"contract_version":"2","input_schema":{"properties":{"city":{"type":"string"}},
    // "required":["city"],"type":"object"},"side_effect_class":"read_only",
    // "tool":"weather.get-forecast","version":"1.0.0"} (no whitespace, keys sorted at every
    // depth). If this changes, every advertised descriptor_hash changes with it.
    assertThat(DescriptorHash.of(forecast(SCHEMA).build()))
        .isEqualTo("sha256:65d7bc63031500e89cbb71d38fe8a271e3a60e18b1755aed03d2d5a89e9314ce");
  }

  @Test
  void ignores_schema_whitespace_and_key_order() {
    String reordered =
        """
        {
          "properties" : { "city" : { "type" : "string" } },
          "required" : [ "city" ],
          "type" : "object"
        }
        """;
    assertThat(DescriptorHash.of(forecast(reordered).build()))
        .isEqualTo(DescriptorHash.of(forecast(SCHEMA).build()));
  }

  @Test
  void ignores_description_and_max_concurrency() {
    assertThat(DescriptorHash.of(forecast(SCHEMA).description("other").maxConcurrency(1).build()))
        .isEqualTo(DescriptorHash.of(forecast(SCHEMA).build()));
  }

  @Test
  void changes_with_the_version_or_the_side_effect_class() {
    String base = DescriptorHash.of(forecast(SCHEMA).build());
    assertThat(DescriptorHash.of(forecast(SCHEMA).version("1.0.1").build())).isNotEqualTo(base);
    assertThat(
            DescriptorHash.of(
                forecast(SCHEMA).sideEffectClass(SideEffectClass.IDEMPOTENT_WRITE).build()))
        .isNotEqualTo(base);
  }

  @Test
  void rejects_a_schema_that_is_not_json() {
    assertThatThrownBy(() -> DescriptorHash.of(forecast("{oops").build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("input schema is not valid JSON");
  }
}
