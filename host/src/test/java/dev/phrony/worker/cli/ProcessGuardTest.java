package dev.phrony.worker.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.isolation.PluginClassLoader;
import dev.phrony.worker.plugin.PluginLoader;
import dev.phrony.worker.plugin.TestPlugins;
import dev.phrony.worker.testing.ChildJvm;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@link ProcessGuard} in real child processes: the exit status says what ended the worker. */
class ProcessGuardTest {

  /** The child: installs the guard as {@link Main} does, then does what its argument says. */
  public static final class Child {
    public static void main(String[] args) throws Exception {
      ProcessGuard.install();
      switch (args[0]) {
        case "core-error" -> {
          Thread t =
              Thread.ofPlatform()
                  .name("phrony-work-loop")
                  .unstarted(
                      () -> {
                        throw new InternalError("boom");
                      });
          t.start();
          t.join(); // the guard halts the process before this returns
        }
        case "plugin-thread-error" -> {
          Thread t =
              Thread.ofPlatform()
                  .name("a-plugins-thread")
                  .unstarted(
                      () -> {
                        throw new StackOverflowError("the plugin's own");
                      });
          t.setContextClassLoader(
              new PluginClassLoader("p", List.of(), Child.class.getClassLoader()));
          t.start();
          t.join();
          System.out.println("still serving");
        }
        case "plugin-exit" -> Rogue.quit();
        case "plugin-exit-virtual" -> Thread.ofVirtual().start(Rogue::quit).join();
        case "plugin-jar" -> { // args[1]: a plugins folder whose one handler ends the process
          var result = new PluginLoader().load(Path.of(args[1]));
          var entry = result.catalog().entries().getFirst();
          Thread.ofVirtual().start(() -> call(entry.handler())).join();
          System.out.println("still serving");
        }
        default -> {}
      }
      ProcessGuard.exit(0);
    }
  }

  private static void call(ToolHandler handler) {
    try {
      handler.handle(null);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** Stands for a plugin's class. */
  static final class Rogue {
    static void quit() {
      System.exit(ExitCodes.PROBLEMS); // "plugin problems", as a plugin might pick
    }
  }

  @Test
  void a_core_thread_dying_of_an_error_ends_the_process_with_the_fatal_status() throws Exception {
    ChildJvm.Result r = ChildJvm.run(Child.class, "core-error");
    assertThat(r.exitCode()).as(r.output()).isEqualTo(ExitCodes.FATAL);
    assertThat(r.output())
        .contains(
            "core thread 'phrony-work-loop' died of"
                + " java.lang.InternalError: boom: exiting with status 8");
  }

  @Test
  void an_error_in_a_plugins_own_thread_does_not_end_the_worker() throws Exception {
    ChildJvm.Result r = ChildJvm.run(Child.class, "plugin-thread-error");
    assertThat(r.exitCode()).as(r.output()).isZero();
    assertThat(r.output())
        .contains(
            "Exception in thread \"a-plugins-thread\""
                + " java.lang.StackOverflowError: the plugin's own")
        .contains("still serving");
  }

  @Test
  void system_exit_from_a_plugin_ends_the_process_with_its_own_status_naming_the_caller()
      throws Exception {
    ChildJvm.Result r = ChildJvm.run(Child.class, "plugin-exit");
    assertThat(r.exitCode())
        .as(r.output())
        .isEqualTo(ExitCodes.PLUGIN_EXIT)
        .isNotEqualTo(ExitCodes.PROBLEMS);
    assertThat(r.output())
        .contains("System.exit called by dev.phrony.worker.cli" + ".ProcessGuardTest$Rogue.quit(")
        .contains("exiting with status 9");
  }

  @Test
  void system_exit_from_a_handlers_virtual_thread_is_caught_too() throws Exception {
    ChildJvm.Result r = ChildJvm.run(Child.class, "plugin-exit-virtual");
    assertThat(r.exitCode()).as(r.output()).isEqualTo(ExitCodes.PLUGIN_EXIT);
    assertThat(r.output())
        .contains("System.exit called by dev.phrony.worker.cli" + ".ProcessGuardTest$Rogue.quit(");
  }

  @ParameterizedTest
  @CsvSource({
    "Runtime.getRuntime().halt(0), Runtime.halt",
    "Runtime.getRuntime().exit(0), Runtime.exit",
    "System.exit(0), System.exit"
  })
  void a_plugin_jar_ending_the_process_with_status_0_ends_it_with_status_9_naming_the_caller(
      String statement, String said, @TempDir Path tmp) throws Exception {
    new TestPlugins(tmp.resolve("build"))
        .jar()
        .handler(
            "rogue.Quit",
            TestPlugins.descriptor("rogue.quit", "1.0.0", "read_only"),
            "",
            statement + "; return null;")
        .writeTo(tmp.resolve("plugins/rogue.jar"));
    ChildJvm.Result r = ChildJvm.run(Child.class, "plugin-jar", tmp.resolve("plugins").toString());
    assertThat(r.exitCode()).as(r.output()).isEqualTo(ExitCodes.PLUGIN_EXIT);
    assertThat(r.output())
        .contains(said + " called by rogue.Quit.handle(Quit.java:")
        .contains("exiting with status 9")
        .doesNotContain("still serving");
  }

  @Test
  void the_hosts_own_exit_keeps_its_status() throws Exception {
    assertThat(ChildJvm.run(Child.class, "none").exitCode()).isZero();
  }
}
