package dev.phrony.worker.call;

import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaException;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import com.networknt.schema.resource.SchemaLoader;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * A handler's input schema, compiled once when its plugin loads, as the {@link ArgsCheck} of its
 * calls (networknt json-schema-validator; JSON Schema 2020-12 unless the schema names its dialect
 * in {@code $schema}). Nothing is fetched: a {@code $ref} must point inside the schema. A violation
 * is told as the JSON pointer of the offending value and the rule it breaks, e.g. {@code /city:
 * expected string, got integer}.
 */
public final class SchemaCheck implements ArgsCheck {
  /** How many violations one answer names at most. */
  static final int MAX_REPORTED = 3;

  private static final ObjectMapper JSON = JsonMapper.builder().build();
  private static final SchemaRegistry REGISTRY =
      SchemaRegistry.withDefaultDialect(
          SpecificationVersion.DRAFT_2020_12,
          b -> b.schemaLoader(SchemaLoader.builder().fetchRemoteResources(false).build()));

  /** A schema that cannot serve: not JSON, not a valid JSON Schema, or a dangling reference. */
  public static final class InvalidSchemaException extends IllegalArgumentException {
    InvalidSchemaException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private final Schema schema;

  private SchemaCheck(Schema schema) {
    this.schema = schema;
  }

  /**
   * The check for {@code schemaText}: {@link ArgsCheck#NONE} when there is none.
   *
   * @throws InvalidSchemaException naming what is wrong with the schema
   */
  public static ArgsCheck of(Optional<String> schemaText) {
    return schemaText.isEmpty() ? ArgsCheck.NONE : compile(schemaText.get());
  }

  /**
   * @throws InvalidSchemaException naming what is wrong with the schema
   */
  public static SchemaCheck compile(String schemaText) {
    JsonNode node;
    try {
      node = JSON.readTree(schemaText);
    } catch (JacksonException e) {
      throw new InvalidSchemaException(
          "the input schema is not JSON: " + e.getOriginalMessage(), e);
    }
    try {
      String dialect =
          node.path("$schema").asString(SpecificationVersion.DRAFT_2020_12.getDialectId());
      List<Error> wrong = REGISTRY.getSchema(SchemaLocation.of(dialect)).validate(node);
      if (!wrong.isEmpty()) {
        throw new InvalidSchemaException(
            "the input schema is not a valid JSON Schema: " + describe(wrong), null);
      }
      Schema schema = REGISTRY.getSchema(SchemaLocation.DOCUMENT, node);
      schema.initializeValidators(); // resolves every $ref now, not on the first call
      return new SchemaCheck(schema);
    } catch (SchemaException e) {
      throw new InvalidSchemaException("the input schema cannot be used: " + e.getMessage(), e);
    }
  }

  @Override
  public String violation(ByteBuffer args) {
    JsonNode node;
    try {
      node = JSON.readTree(JsonCodec.input(args));
    } catch (JacksonException e) {
      return "not JSON: " + e.getOriginalMessage(); // the caller checked: not expected
    }
    List<Error> errors = schema.validate(node);
    return errors.isEmpty() ? null : describe(errors);
  }

  /** The first few violations, "pointer: rule", joined. */
  static String describe(List<Error> errors) {
    String shown =
        errors.stream()
            .limit(MAX_REPORTED)
            .map(SchemaCheck::describe)
            .collect(Collectors.joining("; "));
    return errors.size() > MAX_REPORTED
        ? shown + " (and " + (errors.size() - MAX_REPORTED) + " more)"
        : shown;
  }

  private static String describe(Error e) {
    String at = e.getInstanceLocation().toString();
    Object[] a = e.getArguments() == null ? new Object[0] : e.getArguments();
    return switch (e.getKeyword() == null ? "" : e.getKeyword()) {
      case "type" ->
          pointer(at)
              + ": expected "
              + (a.length > 1 ? a[1] : "another type")
              + ", got "
              + (a.length > 0 ? a[0] : "something else");
      case "required" -> pointer(at + "/" + e.getProperty()) + ": required, but missing";
      case "additionalProperties" ->
          pointer(at + "/" + e.getProperty())
              + ": not allowed (the schema allows no other properties)";
      default -> pointer(at) + ": " + e.getMessage();
    };
  }

  private static String pointer(String at) {
    return at.isEmpty() ? "/" : at;
  }
}
