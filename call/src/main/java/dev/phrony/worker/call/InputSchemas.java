package dev.phrony.worker.call;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.github.victools.jsonschema.generator.CustomDefinition;
import com.github.victools.jsonschema.generator.FieldScope;
import com.github.victools.jsonschema.generator.Option;
import com.github.victools.jsonschema.generator.OptionPreset;
import com.github.victools.jsonschema.generator.SchemaGenerator;
import com.github.victools.jsonschema.generator.SchemaGeneratorConfigBuilder;
import com.github.victools.jsonschema.generator.SchemaVersion;
import com.github.victools.jsonschema.module.jackson.JacksonModule;
import com.github.victools.jsonschema.module.jackson.JacksonOption;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.api.ToolParam;
import dev.phrony.worker.api.TypedToolHandler;
import java.io.IOException;
import java.lang.annotation.Annotation;
import java.math.BigDecimal;
import java.util.Arrays;
import java.util.Optional;
import java.util.function.ToDoubleFunction;

/**
 * The input schema a handler is served with: the one its descriptor gives, else, for a {@link
 * TypedToolHandler} whose argument type is a record, one generated from that record (victools
 * jsonschema-generator, JSON Schema 2020-12): JSON types from the components' Java types (an enum
 * lists its constants), every component required unless {@code @ToolParam(required = false)} or an
 * annotation named {@code Nullable} says otherwise, descriptions and rules from {@link ToolParam},
 * names and descriptions from Jackson's annotations as the codec reads them. Unknown properties are
 * allowed, as the codec ignores them. The worker, the harness and {@code tool-manifest} all go
 * through here, so a handler has the same schema everywhere.
 */
public final class InputSchemas {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final SchemaGenerator GENERATOR = generator();

  private InputSchemas() {}

  /**
   * {@code descriptor} with the generated input schema when it has none and {@code handler} is a
   * typed handler of a record; else {@code descriptor} itself.
   *
   * @throws IllegalArgumentException when the record's schema cannot be generated (naming why)
   */
  public static ToolDescriptor effective(ToolHandler handler, ToolDescriptor descriptor) {
    if (descriptor.inputSchema().isPresent()
        || !(handler instanceof TypedToolHandler<?, ?> typed)
        || typed.argsType() == null
        || !typed.argsType().isRecord()) {
      return descriptor;
    }
    return new ToolDescriptor(
        descriptor.tool(),
        descriptor.version(),
        descriptor.contractVersion(),
        descriptor.maxConcurrency(),
        descriptor.sideEffectClass(),
        descriptor.description(),
        Optional.of(generate(typed.argsType())));
  }

  /**
   * The schema of {@code record}, as JSON text.
   *
   * @throws IllegalArgumentException when it cannot be generated
   */
  public static String generate(Class<?> record) {
    try {
      ObjectNode schema = GENERATOR.generateSchema(record);
      addExampleCall(schema);
      return JSON.writeValueAsString(schema);
    } catch (RuntimeException | IOException e) {
      throw new IllegalArgumentException(
          "the input schema could not be generated from "
              + record.getName()
              + " ("
              + e
              + "): give one with inputSchema(...)",
          e);
    }
  }

  private static SchemaGenerator generator() {
    SchemaGeneratorConfigBuilder b =
        new SchemaGeneratorConfigBuilder(SchemaVersion.DRAFT_2020_12, OptionPreset.PLAIN_JSON)
            .with(new JacksonModule(JacksonOption.RESPECT_JSONPROPERTY_REQUIRED))
            .without(Option.SCHEMA_VERSION_INDICATOR);
    // components in declaration order, as the record reads
    b.forTypesInGeneral().withPropertySorter((x, y) -> 0);
    // an enum by the names the codec reads: @JsonProperty's where a constant has one
    b.forTypesInGeneral()
        .withCustomDefinitionProvider(
            (type, context) ->
                type.getErasedType().isEnum()
                    ? new CustomDefinition(enumSchema(type.getErasedType()), true)
                    : null);
    var fields = b.forFields();
    fields.withRequiredCheck(InputSchemas::required);
    fields.withDescriptionResolver(
        f -> param(f).map(ToolParam::description).filter(d -> !d.isEmpty()).orElse(null));
    fields.withStringPatternResolver(
        f -> param(f).map(ToolParam::pattern).filter(p -> !p.isEmpty()).orElse(null));
    fields.withNumberInclusiveMinimumResolver(f -> bound(f, ToolParam::minimum));
    fields.withNumberInclusiveMaximumResolver(f -> bound(f, ToolParam::maximum));
    fields.withNumberExclusiveMinimumResolver(f -> bound(f, ToolParam::exclusiveMinimum));
    fields.withNumberExclusiveMaximumResolver(f -> bound(f, ToolParam::exclusiveMaximum));
    fields.withInstanceAttributeOverride(
        (node, field, context) ->
            param(field)
                .filter(p -> p.examples().length > 0)
                .ifPresent(p -> node.set("examples", examples(p, field))));
    return new SchemaGenerator(b.build());
  }

  private static ObjectNode enumSchema(Class<?> type) {
    ObjectNode def = JsonNodeFactory.instance.objectNode().put("type", "string");
    ArrayNode values = def.putArray("enum");
    for (Object constant : type.getEnumConstants()) {
      String name = ((Enum<?>) constant).name();
      JsonProperty named;
      try {
        named = type.getField(name).getAnnotation(JsonProperty.class);
      } catch (NoSuchFieldException e) {
        named = null;
      }
      values.add(named != null && !named.value().isEmpty() ? named.value() : name);
    }
    return def;
  }

  private static Optional<ToolParam> param(FieldScope f) {
    return f.isFakeContainerItemScope()
        ? Optional.empty()
        : Optional.ofNullable(f.getAnnotationConsideringFieldAndGetter(ToolParam.class));
  }

  private static boolean required(FieldScope f) {
    boolean nullable =
        f.getRawMember() != null
            && Arrays.stream(f.getRawMember().getAnnotations())
                .map(Annotation::annotationType)
                .anyMatch(t -> t.getSimpleName().equals("Nullable"));
    return !nullable && param(f).map(ToolParam::required).orElse(true);
  }

  private static BigDecimal bound(FieldScope f, ToDoubleFunction<ToolParam> which) {
    return param(f)
        .map(which::applyAsDouble)
        .filter(d -> !Double.isNaN(d))
        .map(BigDecimal::valueOf)
        .map(BigDecimal::stripTrailingZeros)
        .map(d -> d.scale() < 0 ? d.setScale(0) : d)
        .orElse(null);
  }

  private static ArrayNode examples(ToolParam p, FieldScope f) {
    ArrayNode out = JsonNodeFactory.instance.arrayNode();
    Class<?> type = f.getType().getErasedType();
    boolean text = CharSequence.class.isAssignableFrom(type) || type.isEnum() || type == char.class;
    for (String e : p.examples()) {
      if (text) {
        out.add(e);
        continue;
      }
      try {
        out.add(JSON.readTree(e));
      } catch (IOException notJson) {
        out.add(e);
      }
    }
    return out;
  }

  /** Adds {@code examples: [{...}]} when every required property has an example to take. */
  private static void addExampleCall(ObjectNode schema) {
    JsonNode props = schema.path("properties");
    JsonNode required = schema.path("required");
    if (!props.isObject() || !required.isArray() || required.isEmpty()) {
      return;
    }
    ObjectNode call = JsonNodeFactory.instance.objectNode();
    for (JsonNode r : required) {
      JsonNode example = props.path(r.asText()).path("examples").path(0);
      if (example.isMissingNode()) {
        return;
      }
      call.set(r.asText(), example);
    }
    schema.putArray("examples").add(call);
  }
}
