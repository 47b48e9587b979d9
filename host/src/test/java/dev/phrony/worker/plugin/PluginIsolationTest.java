package dev.phrony.worker.plugin;

import static dev.phrony.worker.plugin.TestPlugins.descriptor;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.call.ContextClassLoader;
import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/** What a plugin can and cannot see, with real jars and real classloaders. */
class PluginIsolationTest {

  private static final List<String> HOST_ONLY =
      List.of(
          "io.grpc.Channel",
          "com.fasterxml.jackson.databind.ObjectMapper",
          "com.google.protobuf.Message",
          "picocli.CommandLine",
          "dev.phrony.worker.plugin.PluginLoader");

  @TempDir Path tmp;

  /** A handler that tries to load host classes itself, both ways a library would. */
  private Path probePlugin(Path jar) throws IOException {
    return new TestPlugins(tmp.resolve("build"))
        .jar()
        .classpath(TestPlugins.codeSource(LoggerFactory.class))
        .handler(
            "iso.Probe",
            descriptor("probe", "1", "read_only"),
            """
            static String probe(String name, ClassLoader loader) {
              try {
                Class.forName(name, false, loader);
                return "loaded";
              } catch (ClassNotFoundException e) {
                return "ClassNotFoundException";
              }
            }
            """,
            """
            org.slf4j.LoggerFactory.getLogger(Probe.class).info("probe ran");
            StringBuilder out = new StringBuilder();
            for (String name : call.argsBytes() == null ? new String[0]
                : new String(call.argsBytes()).split(",")) {
              out.append(name).append(" own=").append(probe(name, Probe.class.getClassLoader()))
                  .append(" tccl=")
                  .append(probe(name, Thread.currentThread().getContextClassLoader()))
                  .append('\\n');
            }
            return ToolResult.text(out.toString());
            """)
        .writeTo(jar);
  }

  @Test
  @SuppressWarnings("try")
  void plugin_cannot_load_host_classes_by_its_own_loader_or_the_context_loader() throws Exception {
    Path dir = tmp.resolve("plugins");
    probePlugin(dir.resolve("probe.jar"));
    HandlerCatalog.Entry probe = loadClean(dir).find("probe", "1").orElseThrow();

    ToolResult result;
    try (var tccl = ContextClassLoader.swap(probe.classLoader())) {
      result = probe.handler().handle(FakeCall.withArgs(String.join(",", HOST_ONLY)));
    }

    assertThat(((ToolResult.Text) result).text().lines())
        .containsExactlyElementsOf(
            HOST_ONLY.stream()
                .map(n -> n + " own=ClassNotFoundException tccl=ClassNotFoundException")
                .toList());
    // the host itself does have them
    for (String name : HOST_ONLY) {
      assertThat(Class.forName(name, false, getClass().getClassLoader())).isNotNull();
    }
  }

  @Test
  @SuppressWarnings("try")
  void plugin_shares_the_api_and_slf4j_and_logs_reach_the_host_logback() throws Exception {
    Path dir = tmp.resolve("plugins");
    probePlugin(dir.resolve("probe.jar"));
    HandlerCatalog.Entry probe = loadClean(dir).find("probe", "1").orElseThrow();
    ClassLoader plugin = probe.classLoader();

    assertThat(plugin.loadClass("dev.phrony.worker.api.ToolHandler")).isSameAs(ToolHandler.class);
    assertThat(plugin.loadClass("org.slf4j.LoggerFactory")).isSameAs(LoggerFactory.class);
    assertThat(plugin.loadClass("java.util.List")).isSameAs(List.class);
    assertThat(plugin.loadClass("java.sql.Connection")).isSameAs(java.sql.Connection.class);

    Logger logger = (Logger) LoggerFactory.getLogger("iso.Probe");
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    logger.addAppender(appender);
    try (var tccl = ContextClassLoader.swap(plugin)) {
      probe.handler().handle(FakeCall.withArgs(""));
    } finally {
      logger.detachAppender(appender);
    }
    assertThat(appender.list)
        .extracting(ILoggingEvent::getFormattedMessage)
        .containsExactly("probe ran");
  }

  @Test
  void two_plugins_each_use_their_own_version_of_one_library() throws Exception {
    TestPlugins build = new TestPlugins(tmp.resolve("build"));
    Path dir = tmp.resolve("plugins");
    for (String v : List.of("v1", "v2")) {
      Path lib =
          build
              .jar()
              .source(
                  "lib.Greeter",
                  "package lib; public class Greeter { public static String "
                      + "greet() { return \""
                      + v
                      + "\"; } }")
              .writeTo(tmp.resolve("greeter-" + v + ".jar"));
      Path folder = dir.resolve("greeter-" + v);
      build
          .jar()
          .classpath(lib)
          .handler(
              "g" + v + ".Handler",
              descriptor("greet." + v, "1", "read_only"),
              "",
              "return ToolResult.text(lib.Greeter.greet());")
          .writeTo(folder.resolve("greeter-" + v + ".jar"));
      Files.copy(lib, Files.createDirectories(folder.resolve("lib")).resolve("greeter.jar"));
    }

    HandlerCatalog catalog = loadClean(dir);
    HandlerCatalog.Entry one = catalog.find("greet.v1", "1").orElseThrow();
    HandlerCatalog.Entry two = catalog.find("greet.v2", "1").orElseThrow();

    assertThat(one.handler().handle(null)).isEqualTo(ToolResult.text("v1"));
    assertThat(two.handler().handle(null)).isEqualTo(ToolResult.text("v2"));
    assertThat(one.classLoader().loadClass("lib.Greeter"))
        .isNotSameAs(two.classLoader().loadClass("lib.Greeter"));
  }

  @Test
  void host_resources_and_service_providers_do_not_leak_into_plugins() throws Exception {
    // A host classloader that has a ToolHandler provider and a resource of its own.
    Path hostDir = tmp.resolve("host");
    Files.createDirectories(hostDir.resolve("META-INF/services"));
    Files.writeString(hostDir.resolve(PluginLoader.SERVICES_FILE), "host.Leaked\n");
    Files.writeString(hostDir.resolve("host-only.txt"), "host");
    try (URLClassLoader host =
        new URLClassLoader(new URL[] {hostDir.toUri().toURL()}, getClass().getClassLoader())) {
      Path dir = tmp.resolve("plugins");
      new TestPlugins(tmp.resolve("build"))
          .jar()
          .handler("own.Handler", descriptor("own", "1", "read_only"))
          .entry("own.txt", new byte[] {1})
          .writeTo(dir.resolve("own.jar"));

      LoadResult result = new PluginLoader(host).load(dir);

      assertThat(result.problems()).isEmpty();
      assertThat(result.catalog().entries())
          .extracting(HandlerCatalog.Entry::key)
          .containsExactly("own@1");
      ClassLoader plugin = result.catalog().entries().getFirst().classLoader();
      assertThat(Collections.list(plugin.getResources(PluginLoader.SERVICES_FILE)))
          .singleElement()
          .asString()
          .contains("own.jar!");
      assertThat(host.getResource("host-only.txt")).isNotNull();
      assertThat(plugin.getResource("host-only.txt")).isNull();
      assertThat(plugin.getResource("dev/phrony/worker/plugin/PluginLoader.class")).isNull();
      assertThat(plugin.getResource("own.txt")).isNotNull();
      assertThat(plugin.getResource("java/lang/Object.class")).isNotNull();
      assertThat(plugin.getResource("dev/phrony/worker/api/ToolHandler.class"))
          .isEqualTo(host.getResource("dev/phrony/worker/api/ToolHandler.class"));
    }
  }

  private static HandlerCatalog loadClean(Path dir) {
    LoadResult result = new PluginLoader().load(dir);
    assertThat(result.problems()).isEmpty();
    return result.catalog();
  }
}
