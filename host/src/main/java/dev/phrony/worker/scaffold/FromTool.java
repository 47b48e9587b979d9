package dev.phrony.worker.scaffold;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.call.SchemaCheck;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The sources of a plugin project made from a Tool document: the argument record from the input
 * schema's properties, the descriptor from its class and description, the schema itself as the
 * resource the worker checks calls against (so the contract is the document's, exactly), and a test
 * through the harness.
 */
final class FromTool {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Set<String> KEYWORDS =
      Set.of(
          "abstract",
          "assert",
          "boolean",
          "break",
          "byte",
          "case",
          "catch",
          "char",
          "class",
          "const",
          "continue",
          "default",
          "do",
          "double",
          "else",
          "enum",
          "extends",
          "final",
          "finally",
          "float",
          "for",
          "goto",
          "if",
          "implements",
          "import",
          "instanceof",
          "int",
          "interface",
          "long",
          "native",
          "new",
          "package",
          "private",
          "protected",
          "public",
          "return",
          "short",
          "static",
          "strictfp",
          "super",
          "switch",
          "synchronized",
          "this",
          "throw",
          "throws",
          "transient",
          "try",
          "void",
          "volatile",
          "while",
          "true",
          "false",
          "null",
          "record",
          "var",
          "yield");

  private final PluginProject p;
  private final ToolContract c;
  private final JsonNode schema;

  FromTool(PluginProject p, ToolContract c) {
    this.p = p;
    this.c = c;
    this.schema =
        c.inputSchema().orElse(JsonNodeFactory.instance.objectNode().put("type", "object"));
  }

  /** One component of the record: its Java type and name, and the JSON name when it differs. */
  record Component(String type, String name, String json, boolean required) {}

  List<Component> components() {
    List<Component> out = new ArrayList<>();
    Set<String> required = new java.util.HashSet<>();
    schema.path("required").forEach(r -> required.add(r.asText()));
    for (Map.Entry<String, JsonNode> e : schema.path("properties").properties()) {
      String json = e.getKey();
      if (!isJavaName(json)) {
        continue; // not a Java name: read it from call.argsJson() (see the record's comment)
      }
      out.add(new Component(javaType(e.getValue()), json, json, required.contains(json)));
    }
    return out;
  }

  List<String> skippedNames() {
    List<String> out = new ArrayList<>();
    schema
        .path("properties")
        .properties()
        .forEach(
            e -> {
              if (!isJavaName(e.getKey())) {
                out.add(e.getKey());
              }
            });
    return out;
  }

  private static boolean isJavaName(String s) {
    return !s.isEmpty()
        && Character.isJavaIdentifierStart(s.charAt(0))
        && s.chars().allMatch(Character::isJavaIdentifierPart)
        && !KEYWORDS.contains(s)
        && !s.equals("_");
  }

  private static String javaType(JsonNode s) {
    JsonNode t = s.path("type");
    String type = t.isArray() ? firstNonNull(t) : t.asText("");
    return switch (type) {
      case "string" -> "String";
      case "integer" -> "Long";
      case "number" -> "BigDecimal";
      case "boolean" -> "Boolean";
      case "array" -> "List<" + javaType(s.path("items")).replace("Object", "Object") + ">";
      case "object" -> "Map<String, Object>";
      default -> "Object";
    };
  }

  private static String firstNonNull(JsonNode types) {
    for (JsonNode t : types) {
      if (!t.asText().equals("null")) {
        return t.asText();
      }
    }
    return "";
  }

  /** The schema resource: the document's input schema, pretty printed. */
  String schemaText() {
    try {
      return JSON.copy().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(schema)
          + "\n";
    } catch (IOException e) {
      throw new IllegalStateException("a JSON tree always serializes", e);
    }
  }

  /**
   * Arguments that fit the schema, when they can be told: its first example, else each required
   * property's first example, enum or const value (or a plain value of its type when the property
   * has no rule); checked against the schema as the worker checks calls.
   */
  Optional<String> exampleArgs() {
    JsonNode first = schema.path("examples").path(0);
    Optional<String> candidate;
    if (first.isObject()) {
      candidate = Optional.of(first.toString());
    } else {
      ObjectNode args = JsonNodeFactory.instance.objectNode();
      for (JsonNode r : schema.path("required")) {
        JsonNode prop = schema.path("properties").path(r.asText());
        JsonNode v = value(prop);
        if (v == null) {
          return Optional.empty();
        }
        args.set(r.asText(), v);
      }
      candidate = Optional.of(args.toString());
    }
    try {
      var check = SchemaCheck.compile(schema.toString());
      return candidate.filter(
          a -> check.violation(ByteBuffer.wrap(a.getBytes(StandardCharsets.UTF_8))) == null);
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  private static JsonNode value(JsonNode prop) {
    if (prop.path("examples").isArray() && !prop.get("examples").isEmpty()) {
      return prop.get("examples").get(0);
    }
    if (prop.has("const")) {
      return prop.get("const");
    }
    if (prop.path("enum").isArray() && !prop.get("enum").isEmpty()) {
      return prop.get("enum").get(0);
    }
    JsonNodeFactory f = JsonNodeFactory.instance;
    return switch (prop.path("type").asText("")) {
      case "string" -> f.textNode("example");
      case "integer" -> f.numberNode(1);
      case "number" -> f.numberNode(1);
      case "boolean" -> f.booleanNode(true);
      case "array" -> f.arrayNode();
      case "object" -> f.objectNode();
      default -> null;
    };
  }

  String handler() {
    List<Component> comps = components();
    StringBuilder record = new StringBuilder();
    for (int i = 0; i < comps.size(); i++) {
      Component k = comps.get(i);
      record
          .append(i == 0 ? "\n      " : ",\n      ")
          .append(k.type())
          .append(' ')
          .append(k.name())
          .append(k.required() ? "" : " /* optional: null when absent */");
    }
    List<String> skipped = skippedNames();
    String skippedNote =
        skipped.isEmpty()
            ? ""
            : "\n   * Properties whose names are not Java names ("
                + String.join(", ", skipped)
                + ") are not components: read them from call.argsJson().";
    boolean big = comps.stream().anyMatch(k -> k.type().contains("BigDecimal"));
    boolean list = comps.stream().anyMatch(k -> k.type().contains("List<"));
    boolean map = comps.stream().anyMatch(k -> k.type().contains("Map<"));
    String imports =
        (big ? "import java.math.BigDecimal;\n" : "")
            + (list ? "import java.util.List;\n" : "")
            + (map ? "import java.util.Map;\n" : "");
    return """
        package %1$s;

        import dev.phrony.worker.api.SideEffectClass;
        import dev.phrony.worker.api.ToolCall;
        import dev.phrony.worker.api.ToolDescriptor;
        import dev.phrony.worker.api.TypedToolHandler;
        %9$s
        /**
         * {@code %2$s@%3$s}: %5$s
         *
         * <p>Made from the Tool document {@code %6$s}: its class, description and input schema
         * ({@code %7$s}) are this handler's, so an agent bundle with that document in its tools/
         * binds it as it is.
         */
        public final class %4$s extends TypedToolHandler<%4$s.Args, %4$s.Result> {

          /**
           * The arguments, decoded from the call's JSON after the worker checked it against the
           * input schema.%10$s
           */
          public record Args(%8$s) {}

          /** The result, encoded as the call's JSON payload. */
          public record Result(String status, Args request) {}

          public %4$s() {
            super(Args.class);
          }

          @Override
          public ToolDescriptor descriptor() {
            return ToolDescriptor.builder("%2$s")
                .version("%3$s")
                .sideEffectClass(SideEffectClass.%11$s)
                .maxConcurrency(16)
                .description("%12$s")
                .inputSchemaFrom(%4$s.class, "%7$s")
                .build();
          }

          @Override
          protected Result handle(Args args, ToolCall call) {
            // The tool's work goes here; until then it answers that it accepted the request.
            return new Result("accepted", args);
          }
        }
        """
        .formatted(
            p.javaPackage(),
            p.tool(),
            p.version(),
            p.className(),
            javadoc(c.description().isEmpty() ? "made from a Tool document." : c.description()),
            javadoc(c.source().getFileName().toString()),
            p.schemaResource(),
            record.append(comps.isEmpty() ? "" : "\n  ").toString(),
            imports.isEmpty() ? "" : "\n" + imports,
            skippedNote,
            c.sideEffectClass().toUpperCase(Locale.ROOT),
            javaString(c.description()));
  }

  String test() {
    Optional<String> example = exampleArgs();
    String exampleTest =
        example
            .map(
                a ->
                    """

                      @Test
                      void a_call_that_fits_the_schema_is_accepted() {
                        try (HandlerHarness h = HandlerHarness.of(new %1$s())) {
                          assertThat(payloadText(h.call("%2$s"))).startsWith("{\\"status\\":\\"accepted\\"");
                        }
                      }
                    """
                        .formatted(p.className(), javaString(a)))
            .orElse("");
    boolean requires = !schema.path("required").isEmpty();
    String refusedTest =
        requires
            ? """

                  @Test
                  void a_call_without_the_required_arguments_never_reaches_the_handler() {
                    try (HandlerHarness h = HandlerHarness.of(new %1$s())) {
                      assertThat(h.call("{}")).isInstanceOfSatisfying(CallOutcome.Error.class,
                          e -> assertThat(e.code()).isEqualTo("invalid_args"));
                    }
                  }
                """
                .formatted(p.className())
            : "";
    return """
        package %1$s;

        import static dev.phrony.worker.harness.HandlerHarness.payloadText;
        import static org.assertj.core.api.Assertions.assertThat;

        import dev.phrony.worker.harness.CallOutcome;
        import dev.phrony.worker.harness.HandlerHarness;
        import org.junit.jupiter.api.Test;

        /** Runs the handler through the worker's own call pipeline, without a runtime. */
        class %2$sTest {

          @Test
          void it_serves_the_tool_documents_key_and_class() {
            try (HandlerHarness h = HandlerHarness.of(new %2$s())) {
              assertThat(h.descriptor().key()).isEqualTo("%3$s@%4$s");
              assertThat(h.descriptor().sideEffectClass().wireName()).isEqualTo("%5$s");
            }
          }
        %6$s%7$s}
        """
        .formatted(
            p.javaPackage(),
            p.className(),
            p.tool(),
            p.version(),
            c.sideEffectClass(),
            exampleTest,
            refusedTest);
  }

  /** Text for a Javadoc comment. */
  private static String javadoc(String s) {
    return s.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("*/", "*&#47;")
        .replace("@", "&#64;")
        .replace("\n", " ");
  }

  /** Text for a Java string literal. */
  static String javaString(String s) {
    StringBuilder b = new StringBuilder();
    for (char ch : s.toCharArray()) {
      switch (ch) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (ch < 0x20) {
            b.append(String.format("\\u%04x", (int) ch));
          } else {
            b.append(ch);
          }
        }
      }
    }
    return b.toString();
  }
}
