package dev.phrony.worker.dev;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.plugin.TestPlugins;
import dev.phrony.worker.reload.LiveReload;
import dev.phrony.worker.reload.PluginReloader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * dev's reload as its author sees it: once {@code plugins_reloaded} is printed, the next call
 * reaches the new code, and a call to a key just removed fails at once. dev owns its runtime, so it
 * hands over at once instead of leaving the old plugin generation routed until its lease lapses.
 */
class DevReloadTest {
  @TempDir Path tmp;

  private Path dir;
  private TestPlugins build;
  private DevServer dev;
  private LiveReload live;
  private final List<String> printed = new CopyOnWriteArrayList<>();

  @BeforeEach
  void start() throws Exception {
    dir = Files.createDirectories(tmp.resolve("plugins"));
    build = new TestPlugins(tmp.resolve("build"));
    deploy("a.jar", plugin("a", 2, "A1"));
    deploy("gone.jar", plugin("gone", 2, "still here"));
    DevHost host = DevHost.load(dir, false);
    dev = DevServer.start(new DevServer.Options(0, 0, Optional.of(host.host())));
    live = host.serveLive(dev, printed::add);
  }

  @AfterEach
  void stop() {
    if (live != null) {
      live.close();
    }
    if (dev != null) {
      dev.close();
    }
  }

  private TestPlugins.JarBuilder plugin(String tool, int max, String answer) {
    return build.answering(tool, tool, max, answer);
  }

  private void deploy(String name, TestPlugins.JarBuilder jar) throws IOException {
    jar.deployTo(dir.resolve(name));
  }

  private CallReply call(String key) {
    return ControlClient.of(dev.controlUrl()).call(CallRequest.of(key, "{}", null, null));
  }

  @Test
  void after_a_reload_that_changes_a_descriptor_the_next_call_reaches_the_new_code()
      throws Exception {
    assertThat(call("a@1").payload()).isEqualTo("A1");
    deploy("a.jar", plugin("a", 4, "A2")); // another concurrency: a new plugin generation

    PluginReloader.Outcome o = live.reload("test").get(30, TimeUnit.SECONDS);
    assertThat(o.generation()).as(o.message()).isEqualTo(2);
    assertThat(printed).singleElement().asString().startsWith("plugins_reloaded");

    CallReply next = call("a@1");
    assertThat(next.payload()).as("%s", next).isEqualTo("A2");
    assertThat(next.json().path("worker_id").asText()).endsWith(".g2");
  }

  @Test
  void a_call_to_a_key_just_removed_fails_at_once_with_no_handler() throws Exception {
    assertThat(call("gone@1").payload()).isEqualTo("still here");
    Files.delete(dir.resolve("gone.jar"));
    deploy("a.jar", plugin("a", 4, "A2"));
    live.reload("test").get(30, TimeUnit.SECONDS);

    CallReply gone = call("gone@1");
    assertThat(gone.kind()).as("%s", gone).isEqualTo(CallReply.Kind.DISPATCH_ERROR);
    assertThat(gone.errorCode()).isEqualTo("no_handler");
    assertThat(gone.hint()).contains("served: a@1");
    assertThat(gone.errorMessage())
        .as("answered at once, not after waiting out the dispatch for a handler")
        .isEqualTo("no handler registered for tool");
    assertThat(dev.runtime().events()).noneMatch(e -> gone.callId().equals(e.callId()));
  }
}
