package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.plugin.LoadResult;
import dev.phrony.worker.plugin.PluginLoader;
import dev.phrony.worker.plugin.TestPlugins;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;

/**
 * The bad plugins of {@link BadPluginTest} and {@link RealRuntimeBadPluginTest}, each built as a
 * real jar beside a good plugin ({@code good.hello@1.0.0}, answering {@code hello}).
 */
final class BadPlugins {
  static final String GOOD = "good.hello@1.0.0";

  /** Set to {@code true} to end {@link #SPIN}'s loops. */
  static final String STOP = "bad-plugin-test.stop";

  /** Breaks the promise of an AsyncToolHandler: its start blocks the thread it is called on. */
  static final String BLOCKING_START =
      """
      package stuck;
      import dev.phrony.worker.api.*;
      import java.util.concurrent.*;
      public final class Start implements AsyncToolHandler {
        @Override public ToolDescriptor descriptor() {
          return ToolDescriptor.builder("stuck.start").version("1.0.0").maxConcurrency(4)
              .sideEffectClass(SideEffectClass.READ_ONLY).build();
        }
        @Override public CompletionStage<ToolResult> handleAsync(ToolCall call) {
          try {
            new CountDownLatch(1).await(); // for good
          } catch (InterruptedException e) {
            throw new IllegalStateException("interrupted");
          }
          return CompletableFuture.completedFuture(ToolResult.text("never"));
        }
      }
      """;

  /** Computes until told to stop, and ignores its interrupt: a runaway once its call is off. */
  static final String SPIN =
      """
      package spin;
      import dev.phrony.worker.api.*;
      public final class Forever implements ToolHandler {
        @Override public ToolDescriptor descriptor() {
          return ToolDescriptor.builder("spin.forever").version("1.0.0").maxConcurrency(64)
              .sideEffectClass(SideEffectClass.READ_ONLY).build();
        }
        @Override public ToolResult handle(ToolCall call) {
          long n = 0;
          while (!Boolean.getBoolean("bad-plugin-test.stop")) {
            n++;
          }
          return ToolResult.text("stopped after " + n);
        }
      }
      """;

  private BadPlugins() {}

  /** {@code client}'s drain, on a thread of its own. */
  static CompletableFuture<Void> drain(WorkClient client) {
    return CompletableFuture.runAsync(
        () -> {
          try {
            client.drain();
          } catch (InterruptedException e) {
            throw new IllegalStateException(e);
          }
        });
  }

  /** The bad plugin ({@code bad}, the source of {@code badClass}) and the good one, loaded. */
  static LoadResult load(Path tmp, String bad, String badClass) throws Exception {
    TestPlugins build = new TestPlugins(tmp.resolve("build"));
    Path plugins = tmp.resolve("plugins");
    build.jar().source(badClass, bad).service(badClass).writeTo(plugins.resolve("bad.jar"));
    build
        .jar()
        .handler(
            "good.Hello",
            TestPlugins.descriptor("good.hello", "1.0.0", "read_only"),
            "",
            "return ToolResult.text(\"hello\");")
        .writeTo(plugins.resolve("good.jar"));
    LoadResult loaded = new PluginLoader().load(plugins);
    assertThat(loaded.problems()).isEmpty();
    return loaded;
  }
}
