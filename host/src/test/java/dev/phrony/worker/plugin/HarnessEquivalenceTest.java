package dev.phrony.worker.plugin;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.harness.HandlerHarness;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.work.WorkClient;
import dev.phrony.worker.work.WorkOptions;
import dev.phrony.worker.work.WorkerIdentity;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One JSON mapping on both sides: a handler whose records are mapped with Jackson annotations,
 * with jackson-annotations bundled in its lib/ as an author would, gives the same bytes in the
 * plugin authors' harness (classes on the test class path, as in a plugin's unit test) and in a
 * real host (loaded as a plugin, over gRPC). Before the annotations were shared with plugins,
 * the host saw the plugin's own copy of @JsonProperty as a different class and ignored it.
 */
class HarnessEquivalenceTest {
  @TempDir
  Path tmp;

  private static final String HANDLER = """
      package greet;
      import com.fasterxml.jackson.annotation.JsonProperty;
      import dev.phrony.worker.api.*;
      public final class SayHello extends TypedToolHandler<SayHello.Args, SayHello.Greeting> {
        public record Args(@JsonProperty("user_name") String userName) {}
        public record Greeting(@JsonProperty("greeting_text") String greetingText) {}
        public SayHello() { super(Args.class); }
        @Override public ToolDescriptor descriptor() {
          return ToolDescriptor.builder("greet.say-hello").version("1.0.0")
              .sideEffectClass(SideEffectClass.READ_ONLY).build();
        }
        @Override protected Greeting handle(Args args, ToolCall call) {
          return new Greeting("Hello, " + args.userName());
        }
      }
      """;

  @Test
  void an_annotated_handler_answers_the_same_bytes_in_the_harness_and_in_the_host()
      throws Exception {
    Path annotations = TestPlugins.codeSource(JsonProperty.class);
    Path plugin = tmp.resolve("plugins/greet");
    Path jar = new TestPlugins(tmp.resolve("build")).jar().classpath(annotations)
        .source("greet.SayHello", HANDLER).service("greet.SayHello")
        .writeTo(plugin.resolve("greet.jar"));
    Files.createDirectories(plugin.resolve("lib"));
    Files.copy(annotations, plugin.resolve("lib").resolve(annotations.getFileName()));
    String args = "{\"user_name\":\"Ada\"}";

    String harness;
    try (URLClassLoader test = new URLClassLoader(new URL[] {jar.toUri().toURL()},
        getClass().getClassLoader())) {
      ToolHandler h = (ToolHandler) test.loadClass("greet.SayHello").getConstructor()
          .newInstance();
      try (HandlerHarness hh = HandlerHarness.of(h)) {
        harness = HandlerHarness.payloadText(hh.call(args));
      }
    }

    LoadResult loaded = new PluginLoader().load(tmp.resolve("plugins"));
    assertThat(loaded.problems()).isEmpty();
    String host;
    try (LocalRuntime rt = LocalRuntime.builder().port(0).start();
        WorkClient client = new WorkClient(WorkOptions.defaults(rt.target(),
            new WorkerIdentity("w1", "", "")), loaded.catalog(), new MemoryOutbox())) {
      client.start();
      Await.until("registered", client::registered);
      Outcome o = rt.dispatch(Call.of("greet.say-hello", "1.0.0", args)).get(20,
          TimeUnit.SECONDS);
      assertThat(o).isInstanceOf(Outcome.Result.class);
      host = o.text();
    }

    assertThat(harness).isEqualTo("{\"greeting_text\":\"Hello, Ada\"}");
    assertThat(host).isEqualTo(harness);
  }
}
