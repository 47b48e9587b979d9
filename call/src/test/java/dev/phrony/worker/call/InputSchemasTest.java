package dev.phrony.worker.call;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolCall;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolParam;
import dev.phrony.worker.api.TypedToolHandler;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class InputSchemasTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Retention(RetentionPolicy.RUNTIME)
  @interface Nullable {}

  enum Speed {
    SLOW,
    @JsonProperty("fast")
    FAST
  }

  record Line(String sku, int quantity) {}

  record Order(
      @ToolParam(description = "who pays", pattern = "\\S", examples = "ACME Corp") String payee,
      @ToolParam(exclusiveMinimum = 0, examples = "12.5") BigDecimal amount,
      @ToolParam(minimum = 1, maximum = 60000, required = false) Long waitMs,
      @Nullable String note,
      Speed speed,
      @JsonProperty("line_items") List<Line> lines,
      boolean urgent) {}

  /** A typed handler of {@code A} with the descriptor given. */
  static final class Typed<A> extends TypedToolHandler<A, Map<String, Object>> {
    private final ToolDescriptor d;

    Typed(Class<A> type, ToolDescriptor d) {
      super(type);
      this.d = d;
    }

    @Override
    public ToolDescriptor descriptor() {
      return d;
    }

    @Override
    protected Map<String, Object> handle(A args, ToolCall call) {
      return Map.of();
    }
  }

  static ToolDescriptor.Builder builder() {
    return ToolDescriptor.builder("shop.order")
        .version("1.0.0")
        .sideEffectClass(SideEffectClass.READ_ONLY);
  }

  @Test
  void a_record_gives_types_required_components_enums_descriptions_and_rules() throws Exception {
    JsonNode s = JSON.readTree(InputSchemas.generate(Order.class));

    assertThat(s.get("type").asText()).isEqualTo("object");
    assertThat(s.get("properties").properties())
        .extracting(Map.Entry::getKey)
        .containsExactly("payee", "amount", "waitMs", "note", "speed", "line_items", "urgent");
    assertThat(s.get("required").toString())
        .isEqualTo("[\"payee\",\"amount\",\"speed\",\"line_items\",\"urgent\"]");
    JsonNode p = s.get("properties");
    assertThat(p.get("payee").toString())
        .isEqualTo(
            "{\"type\":\"string\",\"description\":\"who pays\",\"pattern\":\"\\\\S\",\"examples\":[\"ACME Corp\"]}");
    assertThat(p.get("amount").toString())
        .isEqualTo("{\"type\":\"number\",\"exclusiveMinimum\":0,\"examples\":[12.5]}");
    assertThat(p.get("waitMs").toString())
        .isEqualTo("{\"type\":\"integer\",\"minimum\":1,\"maximum\":60000}");
    assertThat(p.get("speed").get("enum").toString()).isEqualTo("[\"SLOW\",\"fast\"]");
    assertThat(p.get("line_items").get("items").get("required").toString())
        .isEqualTo("[\"sku\",\"quantity\"]");
    assertThat(p.get("urgent").get("type").asText()).isEqualTo("boolean");
    assertThat(s.has("additionalProperties")).isFalse(); // the codec ignores unknown properties
    assertThat(s.has("$schema")).isFalse();
    assertThat(s.has("examples")).isFalse(); // speed, line_items and urgent have none
  }

  record City(
      @ToolParam(examples = "Oslo") String city, @ToolParam(required = false) Integer days) {}

  @Test
  void when_every_required_component_has_an_example_the_schema_has_an_example_call()
      throws Exception {
    assertThat(JSON.readTree(InputSchemas.generate(City.class)).get("examples").toString())
        .isEqualTo("[{\"city\":\"Oslo\"}]");
  }

  @Test
  void a_typed_handler_of_a_record_is_served_with_its_generated_schema_and_calls_are_checked() {
    ToolDescriptor d =
        InputSchemas.effective(new Typed<>(City.class, builder().build()), builder().build());

    ArgsCheck check = SchemaCheck.of(d.inputSchema());
    assertThat(check.violation(bytes("{\"city\":\"Oslo\"}"))).isNull();
    assertThat(check.violation(bytes("{\"days\":2}"))).contains("/city").contains("required");
    assertThat(check.violation(bytes("{\"city\":\"Oslo\",\"days\":\"two\"}"))).contains("/days");
  }

  @Test
  void a_hand_written_schema_or_an_argument_type_that_is_no_record_is_left_alone() {
    ToolDescriptor own = builder().inputSchema("{\"type\":\"object\"}").build();
    assertThat(InputSchemas.effective(new Typed<>(City.class, own), own)).isSameAs(own);

    ToolDescriptor none = builder().build();
    @SuppressWarnings({"unchecked", "rawtypes"})
    Typed<Map> map = new Typed<>(Map.class, none);
    assertThat(InputSchemas.effective(map, none)).isSameAs(none);
  }

  private static ByteBuffer bytes(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }
}
