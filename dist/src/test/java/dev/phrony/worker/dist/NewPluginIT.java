package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A new plugin author's path, in a folder outside the checkout, with nothing edited: the one
 * install command of the plugin guide ({@code docs/plugins.md}), then {@code new-plugin}, {@code
 * mvn package} (which runs the generated test), {@code list-handlers} and {@code dev} + {@code
 * call}. Then the author adds a library that brings an older Jackson than the worker's, and the
 * harness still runs the tests.
 *
 * <p>The kit is installed into a local repository of this test's own, in front of the user's (read,
 * never written), so that builds in other checkouts sharing it are not disturbed.
 */
class NewPluginIT {
  /** The plugin guide's install command for the plugin kit (DocsIT checks the guide gives it). */
  static final List<String> INSTALL_KIT =
      List.of("install", "-pl", "plugin-parent", "-am", "-DskipTests");

  /** Older than the worker's Jackson, and without its JsonSerializeAs. */
  static final String OLD_JACKSON = "2.17.2";

  /** A test the author adds: the harness, with the older Jackson on the test class path. */
  private static final String OWN_JACKSON_TEST =
      """
      package com.example.greeting;

      import static org.assertj.core.api.Assertions.assertThat;

      import com.fasterxml.jackson.databind.ObjectMapper;
      import dev.phrony.worker.harness.HandlerHarness;
      import org.junit.jupiter.api.Test;

      class OwnJacksonTest {
        @Test
        void the_harness_runs_the_handler_beside_an_older_jackson() {
          assertThat(new ObjectMapper().version().toString()).isEqualTo("%s");
          try (HandlerHarness h = HandlerHarness.forTool("greet.say-hello@1.0.0")) {
            assertThat(HandlerHarness.payloadText(h.call("{\\\"name\\\":\\\"Ada\\\"}")))
                .isEqualTo("{\\\"text\\\":\\\"Hello, Ada!\\\"}");
          }
        }
      }
      """
          .formatted(OLD_JACKSON);

  @TempDir Path tmp;

  @Test
  void a_new_plugin_builds_lists_and_is_served_by_dev_without_edits() throws Exception {
    Path repo = Path.of(System.getProperty("phrony.repo.dir")).toRealPath();
    maven(repo, tmp.resolve("install-kit.log"), INSTALL_KIT);
    assertThat(tmp.resolve("m2/dev/phrony/worker/phrony-plugin-testing")).isDirectory();

    Path project = tmp.resolve("authors/greeting");
    DistProcess.Result created =
        DistProcess.run(
            tmp,
            "new-plugin",
            "greeting",
            "--tool",
            "greet.say-hello",
            "--version",
            "1.0.0",
            "--dir",
            project.toString());
    assertThat(created.exit()).as("stderr: %s", created.err()).isZero();
    assertThat(created.out())
        .contains("src/main/java/com/example/greeting/SayHello.java")
        .contains("src/test/java/com/example/greeting/SayHelloTest.java");

    Path log = tmp.resolve("package.log");
    maven(project, log, List.of("package"));
    assertThat(Files.readString(log)).contains("Tests run: 2, Failures: 0, Errors: 0");
    Path plugins = project.resolve("target/plugin");
    assertThat(plugins.resolve("greeting/greeting-1.0.0.jar")).isRegularFile();

    // A library dropped from the POM leaves nothing behind: the layout is made afresh.
    Path stale = Files.createDirectories(plugins.resolve("greeting/lib")).resolve("gone.jar");
    Files.write(stale, new byte[] {1});
    maven(project, tmp.resolve("repackage.log"), List.of("package", "-DskipTests"));
    assertThat(stale).doesNotExist();
    assertThat(plugins.resolve("greeting/greeting-1.0.0.jar")).isRegularFile();

    // A library with an older Jackson (one without the annotations the worker's Jackson needs):
    // on the tests' flat class path Maven picks it, and the harness still runs the handler as the
    // worker does, its own Jackson apart. The worker below serves the plugin with it in lib/.
    Path pom = project.resolve("pom.xml");
    Files.writeString(
        pom,
        Files.readString(pom)
            .replace(
                "</project>",
                """
          <dependencies>
            <dependency>
              <groupId>com.fasterxml.jackson.core</groupId>
              <artifactId>jackson-databind</artifactId>
              <version>%s</version>
            </dependency>
          </dependencies>
        </project>
        """
                    .formatted(OLD_JACKSON)));
    Files.writeString(
        project.resolve("src/test/java/com/example/greeting/OwnJacksonTest.java"),
        OWN_JACKSON_TEST);
    Path withJackson = tmp.resolve("package-old-jackson.log");
    maven(project, withJackson, List.of("package"));
    assertThat(Files.readString(withJackson)).contains("Tests run: 3, Failures: 0, Errors: 0");
    assertThat(plugins.resolve("greeting/lib/jackson-databind-" + OLD_JACKSON + ".jar"))
        .isRegularFile();

    // A plain Maven on a JDK older than 21 stops at once, naming the JDK and JAVA_HOME (the
    // wrapper finds a newer JDK by itself; an author's own Maven does not). The author's Maven
    // is the wrapper's own distribution run directly, on Java 17, with this test's repositories.
    Path jdk17 = Path.of("/usr/lib/jvm/java-17-openjdk-amd64");
    Optional<Path> plainMaven = wrapperMaven();
    if (Files.isExecutable(jdk17.resolve("bin/java")) && plainMaven.isPresent()) {
      Path old = tmp.resolve("jdk17.log");
      int exit = maven(plainMaven.get(), project, old, repositoryArgs(List.of("package")), jdk17);
      assertThat(exit).as("%s", Files.readString(old)).isNotZero();
      assertThat(Files.readString(old))
          .contains("needs a JDK 21 or newer; Maven runs on Java 17")
          .contains("Point JAVA_HOME at a JDK 21+")
          .doesNotContain("release version 21 not supported");
    }

    DistProcess.Result listed =
        DistProcess.run(tmp, "list-handlers", "--plugins", plugins.toString());
    assertThat(listed.exit()).as("stderr: %s", listed.err()).isZero();
    assertThat(listed.out()).contains("greet.say-hello@1.0.0").contains("read_only");

    int controlPort = DistProcess.freePort();
    int runtimePort = DistProcess.freePort();
    String runtime = "127.0.0.1:" + runtimePort;
    try (DistProcess dev =
        DistProcess.start(
            tmp,
            Map.of(),
            "dev",
            "--plugins",
            plugins.toString(),
            "--port",
            String.valueOf(runtimePort),
            "--control-port",
            String.valueOf(controlPort))) {
      dev.awaitStdout("Ctrl-C stops.", DistProcess.DEADLINE);
      assertThat(dev.stdout())
          .contains("greet.say-hello@1.0.0  Greets a person by name")
          .contains("call greet.say-hello@1.0.0 '{\"name\":\"Ada\"}'");

      DistProcess.Result hello =
          DistProcess.run(
              tmp, "call", "greet.say-hello@1.0.0", "{\"name\":\"Ada\"}", "--runtime", runtime);
      assertThat(hello.exit()).as("stderr: %s", hello.err()).isZero();
      assertThat(hello.out()).isEqualTo("{\n  \"text\": \"Hello, Ada!\"\n}\n");

      DistProcess.Result wrong =
          DistProcess.run(
              tmp, "call", "greet.say-hello@1.0.0", "{\"name\":42}", "--runtime", runtime);
      assertThat(wrong.exit()).isEqualTo(4);
      assertThat(wrong.err())
          .isEqualTo(
              "invalid_args: arguments do not fit the input schema: "
                  + "/name: expected string, got integer\n");

      dev.interrupt();
      assertThat(dev.awaitExit(DistProcess.DEADLINE).exit()).isZero();
    }

    fromToolDocument();
  }

  /**
   * The other direction: the Tool document of the bundled payments plugin ({@code tool-manifest})
   * makes a project ({@code new-plugin --from-tool}) that builds, tests and is served as it is, and
   * a bundle binding that document finds it served, with the same input schema.
   */
  private void fromToolDocument() throws Exception {
    Path bundle = Files.createDirectories(tmp.resolve("bundle/tools"));
    DistProcess.Result doc =
        DistProcess.run(tmp, "tool-manifest", "payments.process-payment@1.0.0");
    assertThat(doc.exit()).as("stderr: %s", doc.err()).isZero();
    Path toolFile = Files.writeString(bundle.resolve("payments.process-payment.yaml"), doc.out());

    Path project = tmp.resolve("authors/pay");
    DistProcess.Result created =
        DistProcess.run(
            tmp,
            "new-plugin",
            "--from-tool",
            toolFile.toString(),
            "--package",
            "com.example.pay",
            "--dir",
            project.toString());
    assertThat(created.exit()).as("stderr: %s", created.err()).isZero();
    assertThat(created.out())
        .contains("(payments.process-payment@1.0.0, com.example.pay.ProcessPayment)")
        .contains("call payments.process-payment@1.0.0 '{\"amount\":1,\"currency\":\"EUR\"");
    Path log = tmp.resolve("package-from-tool.log");
    maven(project, log, List.of("package"));
    assertThat(Files.readString(log)).contains("Tests run: 3, Failures: 0, Errors: 0");
    Path plugins = project.resolve("target/plugin");

    Path agent =
        Files.writeString(
            bundle.resolveSibling("agent.yaml"),
            """
            apiVersion: phrony.com/v1
            kind: Agent
            metadata: {name: payer, namespace: demo, version: 1.0.0}
            spec:
              purpose: Pays.
              instructions: {text: Pay.}
              model: {provider: stub, name: scripted}
              tools:
                - ref: payments.process-payment@1.0.0
                  as: pay
            """);
    DistProcess.Result checked =
        DistProcess.run(
            tmp,
            "check",
            "--manifest",
            agent.toString(),
            "--plugins",
            plugins.toString(),
            "--format",
            "json");
    assertThat(checked.exit()).as("%s%s", checked.out(), checked.err()).isZero();
    assertThat(checked.out()).contains("\"status\" : \"served\"").contains("\"schema\" : [ ]");

    int controlPort = DistProcess.freePort();
    int runtimePort = DistProcess.freePort();
    try (DistProcess dev =
        DistProcess.start(
            tmp,
            Map.of(),
            "dev",
            "--plugins",
            plugins.toString(),
            "--port",
            String.valueOf(runtimePort),
            "--control-port",
            String.valueOf(controlPort))) {
      dev.awaitStdout("Ctrl-C stops.", DistProcess.DEADLINE);
      DistProcess.Result paid =
          DistProcess.run(
              tmp,
              "call",
              "payments.process-payment@1.0.0",
              "{\"amount\":12.5,\"currency\":\"EUR\",\"payee\":\"ACME\"}",
              "--runtime",
              "127.0.0.1:" + runtimePort);
      assertThat(paid.exit()).as("stderr: %s", paid.err()).isZero();
      assertThat(paid.out()).contains("\"status\": \"accepted\"").contains("\"payee\": \"ACME\"");
      dev.interrupt();
      assertThat(dev.awaitExit(DistProcess.DEADLINE).exit()).isZero();
    }
  }

  /**
   * Runs the checkout's Maven wrapper in {@code dir}, on this JDK, offline, installing into this
   * test's own local repository and reading what is not there from the user's; fails with its
   * output.
   */
  private void maven(Path dir, Path log, List<String> goals)
      throws IOException, InterruptedException {
    Path repo = Path.of(System.getProperty("phrony.repo.dir")).toRealPath();
    int exit =
        maven(
            repo.resolve("mvnw"),
            dir,
            log,
            repositoryArgs(goals),
            Path.of(System.getProperty("java.home")));
    assertThat(exit).as("maven %s in %s:%n%s", goals, dir, Files.readString(log)).isZero();
  }

  /** Offline, installing into this test's own local repository, reading the user's behind it. */
  private List<String> repositoryArgs(List<String> goals) {
    List<String> args =
        new java.util.ArrayList<>(
            List.of(
                "-o",
                "-Dmaven.repo.local=" + tmp.resolve("m2"),
                "-Dmaven.repo.local.tail="
                    + Path.of(System.getProperty("user.home"), ".m2/repository"),
                "-Dmaven.repo.local.tail.ignoreAvailability=true"));
    args.addAll(goals);
    return args;
  }

  /** The Maven the wrapper downloaded (it ran above), to run without the wrapper's JDK choice. */
  private static Optional<Path> wrapperMaven() throws IOException {
    Path dists = Path.of(System.getProperty("user.home"), ".m2/wrapper/dists");
    if (!Files.isDirectory(dists)) {
      return Optional.empty();
    }
    try (var found =
        Files.find(dists, 4, (p, a) -> p.endsWith("bin/mvn") && Files.isExecutable(p))) {
      return found.findFirst();
    }
  }

  /** {@code maven} in {@code dir} on the JDK at {@code javaHome}; returns its exit status. */
  private static int maven(Path maven, Path dir, Path log, List<String> goals, Path javaHome)
      throws IOException, InterruptedException {
    List<String> command = new java.util.ArrayList<>(List.of(maven.toString(), "-B"));
    command.addAll(goals);
    ProcessBuilder pb =
        new ProcessBuilder(command)
            .directory(dir.toFile())
            .redirectErrorStream(true)
            .redirectOutput(log.toFile());
    pb.environment().put("JAVA_HOME", javaHome.toString());
    pb.environment().remove("MAVEN_ARGS");
    Process p = pb.start();
    if (!p.waitFor(Duration.ofMinutes(5).toMillis(), TimeUnit.MILLISECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("maven " + goals + " in " + dir + " did not end in 5 minutes");
    }
    return p.exitValue();
  }
}
