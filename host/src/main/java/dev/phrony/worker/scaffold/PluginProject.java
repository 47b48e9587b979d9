package dev.phrony.worker.scaffold;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A new plugin project, complete and building: its POM on {@code phrony-plugin-parent}, a typed
 * handler with records for its arguments and result, the input schema as a resource, the services
 * file, a test through the harness, and a README. {@code mvn package} builds it into {@code
 * target/plugin/NAME/}, which {@code dev --plugins target/plugin} serves as it is.
 *
 * @param name the project's folder and artifact id ({@code greeting})
 * @param tool the tool it serves ({@code greet.say-hello})
 * @param version the tool's version, also the project's
 * @param javaPackage the handler's package
 * @param kitVersion the version of the plugin kit (this host's)
 * @param contract the Tool document it is made from ({@code new-plugin --from-tool}): its handler,
 *     argument record, descriptor and schema come from it; empty for the greeting example
 */
public record PluginProject(
    String name,
    String tool,
    String version,
    String javaPackage,
    String kitVersion,
    Optional<ToolContract> contract) {

  private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9-]*");
  private static final Pattern TOOL = Pattern.compile("[A-Za-z0-9._-]+");
  private static final Pattern VERSION = Pattern.compile("[A-Za-z0-9._+-]+");
  private static final Pattern PACKAGE = Pattern.compile("[a-z_][a-z0-9_]*(\\.[a-z_][a-z0-9_]*)*");

  /** The greeting example. */
  public PluginProject(
      String name, String tool, String version, String javaPackage, String kitVersion) {
    this(name, tool, version, javaPackage, kitVersion, Optional.empty());
  }

  /**
   * @throws IllegalArgumentException naming the value that cannot be used and what can
   */
  public PluginProject {
    contract = contract == null ? Optional.empty() : contract;
    check(NAME, name, "NAME", "lower-case letters, digits and '-', starting with a letter");
    check(
        TOOL,
        tool,
        "--tool",
        "letters, digits, '.', '_' and '-' (the routing key is" + " tool@version)");
    check(VERSION, version, "--version", "letters, digits, '.', '_', '+' and '-'");
    check(
        PACKAGE,
        javaPackage,
        "--package",
        "a Java package in lower case, e.g." + " com.example.greeting");
  }

  private static void check(Pattern p, String value, String what, String allowed) {
    if (value == null || !p.matcher(value).matches()) {
      throw new IllegalArgumentException(what + " '" + value + "' cannot be used: use " + allowed);
    }
  }

  /** {@code com.example.greeting} for {@code greeting}. */
  public static String defaultPackage(String name) {
    return "com.example." + name.replace("-", "").toLowerCase(Locale.ROOT);
  }

  /** The handler's class name: the tool's last segment in upper camel case. */
  public String className() {
    String last = tool.substring(tool.lastIndexOf('.') + 1);
    StringBuilder b = new StringBuilder();
    for (String part : last.split("[-_]")) {
      if (!part.isEmpty()) {
        b.append(Character.toUpperCase(part.charAt(0))).append(part.substring(1));
      }
    }
    String c = b.toString().replaceAll("[^A-Za-z0-9]", "");
    return c.isEmpty() || !Character.isJavaIdentifierStart(c.charAt(0)) ? "Tool" + c : c;
  }

  /** The schema resource's name, beside the handler class. */
  String schemaResource() {
    return tool.substring(tool.lastIndexOf('.') + 1) + ".schema.json";
  }

  /**
   * Writes the project into {@code dir} (created; it must not exist, or be empty).
   *
   * @return the files written, relative to {@code dir}
   * @throws IllegalArgumentException if {@code dir} exists and is not an empty folder
   */
  public List<Path> writeTo(Path dir) throws IOException {
    if (Files.exists(dir)) {
      if (!Files.isDirectory(dir)) {
        throw new IllegalArgumentException(
            dir + " exists and is not a folder: choose another" + " --dir or NAME");
      }
      try (Stream<Path> s = Files.list(dir)) {
        if (s.findAny().isPresent()) {
          throw new IllegalArgumentException(
              dir + " is not empty: choose another --dir or" + " NAME, or remove it");
        }
      }
    }
    List<Path> written = new ArrayList<>();
    for (Map.Entry<String, String> f : files().entrySet()) {
      Path file = dir.resolve(f.getKey());
      Files.createDirectories(file.getParent());
      Files.writeString(file, f.getValue(), StandardCharsets.UTF_8);
      written.add(dir.relativize(file));
    }
    return written;
  }

  /** Every file of the project by relative path, in the order a reader meets them. */
  Map<String, String> files() {
    String pkgPath = javaPackage.replace('.', '/');
    String cls = className();
    Map<String, String> files = new LinkedHashMap<>();
    files.put("pom.xml", pom());
    files.put("README.md", readme());
    Optional<FromTool> from = contract.map(c -> new FromTool(this, c));
    files.put(
        "src/main/java/" + pkgPath + "/" + cls + ".java",
        from.map(FromTool::handler).orElseGet(this::handler));
    files.put(
        "src/main/resources/" + pkgPath + "/" + schemaResource(),
        from.map(FromTool::schemaText).orElseGet(PluginProject::schema));
    files.put(
        "src/main/resources/META-INF/services/dev.phrony.worker.api.ToolHandler",
        javaPackage + "." + cls + "\n");
    files.put(
        "src/test/java/" + pkgPath + "/" + cls + "Test.java",
        from.map(FromTool::test).orElseGet(this::test));
    files.put(".gitignore", "target/\n");
    return files;
  }

  private String pom() {
    return """
        <?xml version="1.0" encoding="UTF-8"?>
        <project xmlns="http://maven.apache.org/POM/4.0.0"
                 xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
                 xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
          <modelVersion>4.0.0</modelVersion>
          <!-- Java 21, the plugin API (provided), the test harness, and packaging into
               target/plugin/%1$s/ as the worker loads it. -->
          <parent>
            <groupId>dev.phrony.worker</groupId>
            <artifactId>phrony-plugin-parent</artifactId>
            <version>%2$s</version>
            <relativePath/>
          </parent>
          <groupId>%3$s</groupId>
          <artifactId>%1$s</artifactId>
          <version>%4$s</version>
          <name>%1$s</name>
          <description>A phrony-worker plugin serving %5$s@%4$s.</description>

          <!-- A library the handler needs goes here with the default (compile) scope:
               package copies it into target/plugin/%1$s/lib/. -->
        </project>
        """
        .formatted(name, kitVersion, javaPackage, version, tool);
  }

  private String handler() {
    return """
        package %1$s;

        import dev.phrony.worker.api.SideEffectClass;
        import dev.phrony.worker.api.ToolCall;
        import dev.phrony.worker.api.ToolDescriptor;
        import dev.phrony.worker.api.TypedToolHandler;

        /** {@code %2$s@%3$s}: greets a person by name. */
        public final class %4$s extends TypedToolHandler<%4$s.Args, %4$s.Greeting> {

          /** The arguments, decoded from the call's JSON (checked against %5$s first). */
          public record Args(String name) {}

          /** The result, encoded as the call's JSON payload. */
          public record Greeting(String text) {}

          public %4$s() {
            super(Args.class);
          }

          @Override
          public ToolDescriptor descriptor() {
            return ToolDescriptor.builder("%2$s")
                .version("%3$s")
                .sideEffectClass(SideEffectClass.READ_ONLY)
                .maxConcurrency(16)
                .description("Greets a person by name")
                .inputSchemaFrom(%4$s.class, "%5$s")
                .build();
          }

          @Override
          protected Greeting handle(Args args, ToolCall call) {
            // The worker checked the arguments against the schema: name is a non-blank string.
            return new Greeting("Hello, " + args.name().strip() + "!");
          }
        }
        """
        .formatted(javaPackage, tool, version, className(), schemaResource());
  }

  private static String schema() {
    return """
        {
          "type": "object",
          "properties": {
            "name": {"type": "string", "pattern": "\\\\S", "description": "who to greet"}
          },
          "required": ["name"],
          "additionalProperties": false,
          "examples": [{"name": "Ada"}]
        }
        """;
  }

  private String test() {
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
          void greets_by_name() {
            try (HandlerHarness h = HandlerHarness.of(new %2$s())) {
              assertThat(payloadText(h.call("{\\"name\\":\\"Ada\\"}")))
                  .isEqualTo("{\\"text\\":\\"Hello, Ada!\\"}");
            }
          }

          @Test
          void arguments_that_break_the_schema_never_reach_the_handler() {
            try (HandlerHarness h = HandlerHarness.of(new %2$s())) {
              assertThat(h.call("{\\"name\\":42}")).isInstanceOfSatisfying(CallOutcome.Error.class,
                  e -> {
                    assertThat(e.code()).isEqualTo("invalid_args");
                    assertThat(e.message()).endsWith("/name: expected string, got integer");
                  });
            }
          }
        }
        """
        .formatted(javaPackage, className());
  }

  /**
   * Arguments a first call can take: the greeting's, or ones that fit the Tool document's schema.
   */
  public String exampleArgs() {
    return contract
        .map(c -> new FromTool(this, c).exampleArgs().orElse("{}"))
        .orElse("{\"name\":\"Ada\"}");
  }

  private String readme() {
    return """
        # %1$s

        A [phrony-worker](https://phrony.com) plugin serving `%2$s@%3$s`.

        Needs a JDK 21 or newer and Maven 3.6.3 or newer, with the plugin kit installed (from a
        phrony-worker checkout: `./mvnw -B install -pl plugin-parent -am -DskipTests`).

        Build and test:

            mvn package

        That lays the plugin out as the worker loads it, in `target/plugin/%1$s/` (its jar, and
        its libraries in `lib/` if it has any). Check it, then try it:

            phrony-worker list-handlers --plugins target/plugin
            phrony-worker dev --plugins target/plugin
            phrony-worker call %2$s@%3$s '%7$s'     # in another terminal

        Deploy by copying `target/plugin/%1$s/` into the worker's `plugins/` folder.

        - The handler: `src/main/java/%4$s/%5$s.java`
        - Its input schema (the worker checks every call's arguments against it):
          `src/main/resources/%4$s/%6$s`
        - The services file that lists it: `src/main/resources/META-INF/services/dev.phrony.worker.api.ToolHandler`
        - Its test, through the worker's own call pipeline: `src/test/java/%4$s/%5$sTest.java`
        """
        .formatted(
            name,
            tool,
            version,
            javaPackage.replace('.', '/'),
            className(),
            schemaResource(),
            exampleArgs());
  }
}
