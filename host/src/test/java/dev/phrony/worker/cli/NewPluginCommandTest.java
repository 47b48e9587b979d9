package dev.phrony.worker.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.HostVersion;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code new-plugin}: what it writes, and what it refuses. (NewPluginIT builds and serves it.) */
class NewPluginCommandTest {
  @TempDir Path tmp;

  @Test
  void writes_a_project_on_the_plugin_parent_with_handler_schema_services_test_and_readme()
      throws Exception {
    Path dir = tmp.resolve("greeting");
    CliRun r =
        CliRun.run("new-plugin", "greeting", "--tool", "greet.say-hello", "--dir", dir.toString());

    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(Files.readString(dir.resolve("pom.xml")))
        .contains("<artifactId>phrony-plugin-parent</artifactId>")
        .contains("<version>" + HostVersion.get() + "</version>")
        .contains("<artifactId>greeting</artifactId>")
        .contains("<version>1.0.0</version>");
    assertThat(
            Files.readString(
                dir.resolve(
                    "src/main/resources/META-INF/services/" + "dev.phrony.worker.api.ToolHandler")))
        .isEqualTo("com.example.greeting.SayHello\n");
    assertThat(Files.readString(dir.resolve("src/main/java/com/example/greeting/SayHello.java")))
        .contains("ToolDescriptor.builder(\"greet.say-hello\")")
        .contains(".version(\"1.0.0\")")
        .contains(".inputSchemaFrom(SayHello.class, \"say-hello.schema.json\")");
    assertThat(dir.resolve("src/main/resources/com/example/greeting/say-hello.schema.json"))
        .content()
        .contains("\"required\": [\"name\"]");
    assertThat(dir.resolve("src/test/java/com/example/greeting/SayHelloTest.java")).exists();
    assertThat(dir.resolve("README.md"))
        .content()
        .contains("mvn package")
        .contains("phrony-worker dev --plugins target/plugin");
    assertThat(r.out()).contains("next:").contains("mvn package");
    Path abs = dir.toAbsolutePath().normalize();
    assertThat(r.out())
        .as("every next line works from any folder")
        .contains("  (cd " + abs + " && mvn package)")
        .contains(" dev --plugins " + abs.resolve("target/plugin"));
  }

  @Test
  void from_a_tool_document_the_record_descriptor_and_schema_are_the_documents() throws Exception {
    Path tools = Files.createDirectories(tmp.resolve("bundle/tools"));
    Files.createDirectories(tmp.resolve("bundle/schemas"));
    Files.writeString(
        tmp.resolve("bundle/schemas/order.json"),
        """
        {"type": "object", "required": ["sku", "quantity"],
         "properties": {"sku": {"type": "string", "pattern": "^[A-Z]+$", "examples": ["ABC"]},
                        "quantity": {"type": "integer", "minimum": 1},
                        "price": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}},
                        "gift-wrap": {"type": "boolean"}}}
        """);
    Path doc =
        Files.writeString(
            tools.resolve("shop.place-order.yaml"),
            """
            apiVersion: phrony.com/v1
            kind: Tool
            metadata: {namespace: shop, name: place-order, version: 2.1.0}
            spec:
              description: Places an "order" for a customer.
              side_effect_class: non_idempotent_write
              input_schema: {ref: schemas/order}
            """);
    Path dir = tmp.resolve("order");

    CliRun r = CliRun.run("new-plugin", "--from-tool", doc.toString(), "--dir", dir.toString());

    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out())
        .contains("(shop.place-order@2.1.0, com.example.placeorder.PlaceOrder)")
        .contains(" call shop.place-order@2.1.0 '{\"sku\":\"ABC\",\"quantity\":1}'");
    String handler =
        Files.readString(dir.resolve("src/main/java/com/example/placeorder/PlaceOrder.java"));
    assertThat(handler)
        .contains("public record Args(")
        .contains("String sku,")
        .contains("Long quantity,")
        .contains("BigDecimal price /* optional: null when absent */")
        .contains("List<String> tags /* optional: null when absent */")
        .contains("(gift-wrap) are not components")
        .contains(".version(\"2.1.0\")")
        .contains(".sideEffectClass(SideEffectClass.NON_IDEMPOTENT_WRITE)")
        .contains(".description(\"Places an \\\"order\\\" for a customer.\")");
    assertThat(dir.resolve("src/main/resources/com/example/placeorder/place-order.schema.json"))
        .content()
        .contains("\"pattern\" : \"^[A-Z]+$\"");
    assertThat(dir.resolve("src/test/java/com/example/placeorder/PlaceOrderTest.java"))
        .content()
        .contains("a_call_that_fits_the_schema_is_accepted")
        .contains("a_call_without_the_required_arguments_never_reaches_the_handler");

    CliRun both =
        CliRun.run(
            "new-plugin",
            "--from-tool",
            doc.toString(),
            "--tool",
            "x.y",
            "--dir",
            tmp.resolve("b").toString());
    assertThat(both.exit()).isEqualTo(1);
    assertThat(both.err()).contains("leave out --tool and --version");
    CliRun agent = CliRun.run("new-plugin", "--from-tool", tmp.resolve("nowhere.yaml").toString());
    assertThat(agent.exit()).isEqualTo(1);
    assertThat(agent.err()).contains("does not exist");
  }

  @Test
  void refuses_a_folder_that_is_not_empty_and_names_it() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("taken"));
    Files.writeString(dir.resolve("notes.txt"), "mine");
    CliRun r =
        CliRun.run("new-plugin", "greeting", "--tool", "greet.say-hello", "--dir", dir.toString());
    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err()).contains(dir + " is not empty");
    assertThat(dir.resolve("notes.txt")).content().isEqualTo("mine");
  }

  @Test
  void refuses_names_a_routing_key_or_package_cannot_hold() {
    CliRun badTool =
        CliRun.run(
            "new-plugin", "greeting", "--tool", "greet say", "--dir", tmp.resolve("a").toString());
    assertThat(badTool.exit()).isEqualTo(1);
    assertThat(badTool.err()).contains("--tool 'greet say' cannot be used");
    CliRun badName =
        CliRun.run(
            "new-plugin",
            "Greeting!",
            "--tool",
            "greet.say-hello",
            "--dir",
            tmp.resolve("b").toString());
    assertThat(badName.exit()).isEqualTo(1);
    assertThat(badName.err()).contains("NAME 'Greeting!' cannot be used");
    assertThat(tmp.resolve("a")).doesNotExist();
  }
}
