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
