package dev.phrony.worker.call;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class SchemaCheckTest {
  private static final String FORECAST =
      """
      {"type": "object",
       "properties": {
         "city": {"type": "string", "minLength": 1},
         "days": {"type": "integer", "minimum": 1, "maximum": 7},
         "tags": {"type": "array", "items": {"type": "string"}}},
       "required": ["city"],
       "additionalProperties": false}""";

  private static String check(String schema, String args) {
    return SchemaCheck.compile(schema)
        .violation(ByteBuffer.wrap(args.getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void violations_name_the_json_pointer_and_the_rule() {
    assertThat(check(FORECAST, "{\"city\":\"Oslo\",\"days\":3}")).isNull();
    assertThat(check(FORECAST, "{\"city\":42}")).isEqualTo("/city: expected string, got integer");
    assertThat(check(FORECAST, "{}")).isEqualTo("/city: required, but missing");
    assertThat(check(FORECAST, "{\"city\":\"Oslo\",\"zip\":1}"))
        .isEqualTo("/zip: not allowed (the schema allows no other properties)");
    assertThat(check(FORECAST, "{\"city\":\"Oslo\",\"days\":9}"))
        .isEqualTo("/days: must have a maximum value of 7");
    assertThat(check(FORECAST, "{\"city\":\"Oslo\",\"tags\":[\"a\",3]}"))
        .isEqualTo("/tags/1: expected string, got integer");
    assertThat(check(FORECAST, "[1]")).isEqualTo("/: expected object, got array");
  }

  @Test
  void no_schema_checks_nothing() {
    assertThat(SchemaCheck.of(Optional.empty())).isSameAs(ArgsCheck.NONE);
  }

  @Test
  void a_schema_that_cannot_serve_is_refused_with_the_reason() {
    assertThatThrownBy(() -> SchemaCheck.compile("{\"type\": "))
        .isInstanceOf(SchemaCheck.InvalidSchemaException.class)
        .hasMessageStartingWith("the input schema is not JSON: ");
    assertThatThrownBy(() -> SchemaCheck.compile("{\"type\": 12}"))
        .isInstanceOf(SchemaCheck.InvalidSchemaException.class)
        .hasMessageStartingWith("the input schema is not a valid JSON Schema: /type: ");
    assertThatThrownBy(
            () ->
                SchemaCheck.compile(
                    "{\"properties\": {\"a\": {\"$ref\": \"https://example.invalid/a.json\"}}}"))
        .isInstanceOf(SchemaCheck.InvalidSchemaException.class)
        .hasMessageStartingWith("the input schema cannot be used: ");
  }

  @Test
  void references_inside_the_schema_resolve() {
    String schema =
        """
        {"$defs": {"city": {"type": "string"}},
         "type": "object", "properties": {"city": {"$ref": "#/$defs/city"}}}""";
    assertThat(check(schema, "{\"city\":\"Oslo\"}")).isNull();
    assertThat(check(schema, "{\"city\":1}")).isEqualTo("/city: expected string, got integer");
  }
}
