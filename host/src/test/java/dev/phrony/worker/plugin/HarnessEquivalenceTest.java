package dev.phrony.worker.plugin;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.harness.HandlerHarness;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.testing.ChildJvm;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.work.WorkClient;
import dev.phrony.worker.work.WorkOptions;
import dev.phrony.worker.work.WorkerIdentity;
import java.io.File;
import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One JSON mapping on both sides: a handler whose records are mapped with Jackson annotations, and
 * which bundles a Jackson of its own in its lib/ as an author would, gives the same bytes in the
 * plugin authors' harness (classes on the test class path, as in a plugin's unit test) and in a
 * real host (loaded as a plugin, over gRPC). Before the annotations were shared with plugins, the
 * host saw the plugin's own copy of @JsonProperty as a different class and ignored it; before the
 * harness carried its pipeline apart from the test class path, a plugin's older Jackson there
 * replaced the pipeline's, and the harness failed to start.
 */
class HarnessEquivalenceTest {
  private static final String ARGS = "{\"user_name\":\"Ada\"}";

  @TempDir Path tmp;

  /** The handler also says which Jackson it sees itself: its own, not the pipeline's. */
  private static final String HANDLER =
      """
      package greet;
      import com.fasterxml.jackson.annotation.JsonProperty;
      import com.fasterxml.jackson.databind.ObjectMapper;
      import dev.phrony.worker.api.*;
      public final class SayHello extends TypedToolHandler<SayHello.Args, SayHello.Greeting> {
        public record Args(@JsonProperty("user_name") String userName) {}
        public record Greeting(@JsonProperty("greeting_text") String greetingText,
            @JsonProperty("own_jackson") String ownJackson) {}
        public SayHello() { super(Args.class); }
        @Override public ToolDescriptor descriptor() {
          return ToolDescriptor.builder("greet.say-hello").version("1.0.0")
              .sideEffectClass(SideEffectClass.READ_ONLY).build();
        }
        @Override protected Greeting handle(Args args, ToolCall call) {
          return new Greeting("Hello, " + args.userName(), new ObjectMapper().version().toString());
        }
      }
      """;

  /** A plugin author's test, run as surefire runs it: on a flat class path, as a main class. */
  private static final String AUTHORS_TEST =
      """
      package greet;
      import dev.phrony.worker.harness.HandlerHarness;
      public final class AuthorsTest {
        public static void main(String[] args) {
          System.out.println("test class path: jackson-databind "
              + com.fasterxml.jackson.databind.cfg.PackageVersion.VERSION);
          try (HandlerHarness of = HandlerHarness.of(new SayHello());
              HandlerHarness found = HandlerHarness.forTool("greet.say-hello@1.0.0")) {
            System.out.println("of: " + HandlerHarness.payloadText(of.call(args[0])));
            System.out.println("forTool: " + HandlerHarness.payloadText(found.call(args[0])));
          }
        }
      }
      """;

  @Test
  void an_annotated_handler_answers_the_same_bytes_in_the_harness_and_in_the_host()
      throws Exception {
    Path jar = plugin(hostJackson());

    String harness;
    try (URLClassLoader test =
        new URLClassLoader(new URL[] {jar.toUri().toURL()}, getClass().getClassLoader())) {
      ToolHandler h = (ToolHandler) test.loadClass("greet.SayHello").getConstructor().newInstance();
      try (HandlerHarness hh = HandlerHarness.of(h)) {
        harness = HandlerHarness.payloadText(hh.call(ARGS));
      }
    }

    String own = com.fasterxml.jackson.databind.cfg.PackageVersion.VERSION.toString();
    assertThat(harness).isEqualTo(greeting(own));
    assertThat(served()).isEqualTo(harness);
  }

  @Test
  void a_plugin_with_an_older_jackson_answers_the_same_bytes_in_its_harness_test_and_in_the_host()
      throws Exception {
    String old = System.getProperty("phrony.old.jackson.version");
    List<Path> oldJackson;
    try (Stream<Path> jars = Files.list(Path.of(System.getProperty("phrony.old.jackson.dir")))) {
      oldJackson = jars.sorted().toList();
    }
    assertThat(oldJackson).hasSize(3);
    Path jar = plugin(oldJackson);
    Path test =
        new TestPlugins(tmp.resolve("build-test"))
            .jar()
            .classpath(jar)
            .classpath(TestPlugins.codeSource(HandlerHarness.class))
            .classpath(oldJackson.toArray(Path[]::new))
            .source("greet.AuthorsTest", AUTHORS_TEST)
            .writeTo(tmp.resolve("authors-test.jar"));

    // The plugin's test class path as Maven mediates it when the plugin depends on the older
    // jackson-databind: this test's own (the harness, the plugin API, SLF4J and much else), with
    // the older Jackson where the host's was, and the plugin's classes and its test.
    List<Path> testClasspath = new ArrayList<>();
    List<Path> hostJackson = hostJackson();
    for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (!hostJackson.contains(Path.of(e).toAbsolutePath())) {
        testClasspath.add(Path.of(e));
      }
    }
    testClasspath.addAll(oldJackson);
    testClasspath.addAll(List.of(jar, test));

    ChildJvm.Result run =
        ChildJvm.run(testClasspath, "greet.AuthorsTest", Duration.ofMinutes(2), ARGS);
    assertThat(run.exitCode()).as(run.output()).isZero();
    assertThat(run.output())
        .contains("test class path: jackson-databind " + old + "\n")
        .contains("of: " + greeting(old) + "\n")
        .contains("forTool: " + greeting(old) + "\n");
    assertThat(served()).isEqualTo(greeting(old));
  }

  /** The jars of the host's own Jackson 2 (databind, core, annotations). */
  private static List<Path> hostJackson() {
    return List.of(
        TestPlugins.codeSource(ObjectMapper.class),
        TestPlugins.codeSource(JsonFactory.class),
        TestPlugins.codeSource(JsonProperty.class));
  }

  private static String greeting(String jackson) {
    return "{\"greeting_text\":\"Hello, Ada\",\"own_jackson\":\"" + jackson + "\"}";
  }

  /** plugins/greet/: greet.jar, compiled against {@code jackson}, which lib/ bundles. */
  private Path plugin(List<Path> jackson) throws IOException {
    Path plugin = tmp.resolve("plugins/greet");
    Path jar =
        new TestPlugins(tmp.resolve("build"))
            .jar()
            .classpath(jackson.toArray(Path[]::new))
            .source("greet.SayHello", HANDLER)
            .service("greet.SayHello")
            .writeTo(plugin.resolve("greet.jar"));
    Path lib = Files.createDirectories(plugin.resolve("lib"));
    for (Path j : jackson) {
      Files.copy(j, lib.resolve(j.getFileName()));
    }
    return jar;
  }

  /** What a real host serving plugins/ answers to {@link #ARGS}, over gRPC. */
  private String served() throws Exception {
    LoadResult loaded = new PluginLoader().load(tmp.resolve("plugins"));
    assertThat(loaded.problems()).isEmpty();
    try (LocalRuntime rt = LocalRuntime.builder().port(0).start();
        WorkClient client =
            new WorkClient(
                WorkOptions.defaults(rt.target(), new WorkerIdentity("w1", "", "")),
                loaded.catalog(),
                new MemoryOutbox())) {
      client.start();
      Await.until("registered", client::registered);
      Outcome o = rt.dispatch(Call.of("greet.say-hello", "1.0.0", ARGS)).get(20, TimeUnit.SECONDS);
      assertThat(o).isInstanceOf(Outcome.Result.class);
      return o.text();
    }
  }
}
