package dev.phrony.worker.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.worker.UserErrorException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where the state lives: never in a build output, and moved out of one it was left in. */
class StateDirOptionTest {
  @TempDir Path tmp;

  private static Properties home(Path dir) {
    Properties p = new Properties();
    p.setProperty("phrony.home", dir.toString());
    return p;
  }

  @Test
  void flag_then_env_then_the_distribution_then_the_users_state_folder() {
    Properties dist = home(Path.of("/opt/phrony-worker"));
    Map<String, String> env =
        Map.of("PHRONY_WORKER_STATE_DIR", "/var/lib/phrony", "HOME", "/home/ada");
    assertThat(StateDirOption.resolve(Path.of("/x/state"), env, dist))
        .isEqualTo(Path.of("/x/state"));
    assertThat(StateDirOption.resolve(null, env, dist)).isEqualTo(Path.of("/var/lib/phrony"));
    assertThat(StateDirOption.resolve(null, Map.of("HOME", "/home/ada"), dist))
        .isEqualTo(Path.of("/opt/phrony-worker/state"));
    // The distribution a checkout builds lives in target/: its state goes to the user's.
    Properties checkout = home(Path.of("/src/phrony/dist/target/dist/phrony-worker"));
    assertThat(StateDirOption.resolve(null, Map.of("HOME", "/home/ada"), checkout))
        .isEqualTo(Path.of("/home/ada/.local/state/phrony-worker"));
    assertThat(
            StateDirOption.resolve(
                null, Map.of("HOME", "/home/ada", "XDG_STATE_HOME", "/home/ada/.state"), checkout))
        .isEqualTo(Path.of("/home/ada/.state/phrony-worker"));
    assertThat(StateDirOption.resolve(null, Map.of("HOME", "/home/ada"), new Properties()))
        .isEqualTo(Path.of("/home/ada/.local/state/phrony-worker"));
  }

  @Test
  void a_state_dir_inside_a_build_output_is_refused_unless_allowed() {
    Path inTarget = tmp.resolve("project/target/state");
    Map<String, String> env = Map.of("HOME", tmp.resolve("home").toString());
    assertThatThrownBy(() -> StateDirOption.resolveForUse(inTarget, false, env, new Properties()))
        .isInstanceOf(UserErrorException.class)
        .hasMessageContaining("state dir " + inTarget + " is inside a build output (target/)")
        .hasMessageContaining("--state-dir-in-build-output");
    assertThat(StateDirOption.resolveForUse(inTarget, true, env, new Properties()))
        .isEqualTo(inTarget);
  }

  @Test
  void state_left_at_the_old_checkout_default_is_moved_with_everything_in_it() throws Exception {
    Path dist = tmp.resolve("src/dist/target/dist/phrony-worker");
    Path old = Files.createDirectories(dist.resolve("state/outbox"));
    Files.writeString(old.resolve("00000000000000000001.batch"), "held result");
    Files.writeString(dist.resolve("state/worker-id"), "w-1\n");
    Map<String, String> env = Map.of("HOME", tmp.resolve("home").toString());

    Path dir = StateDirOption.resolveForUse(null, false, env, home(dist));

    assertThat(dir).isEqualTo(tmp.resolve("home/.local/state/phrony-worker"));
    assertThat(dir.resolve("outbox/00000000000000000001.batch")).content().isEqualTo("held result");
    assertThat(dir.resolve("worker-id")).content().isEqualTo("w-1\n");
    assertThat(dist.resolve("state")).doesNotExist();
  }

  @Test
  void an_old_default_beside_a_new_state_dir_is_left_alone() throws Exception {
    Path dist = tmp.resolve("src/dist/target/dist/phrony-worker");
    Files.createDirectories(dist.resolve("state"));
    Files.writeString(dist.resolve("state/worker-id"), "old\n");
    Path current = Files.createDirectories(tmp.resolve("home/.local/state/phrony-worker"));
    Files.writeString(current.resolve("worker-id"), "new\n");
    Map<String, String> env = Map.of("HOME", tmp.resolve("home").toString());

    assertThat(StateDirOption.resolveForUse(null, false, env, home(dist))).isEqualTo(current);
    assertThat(current.resolve("worker-id")).content().isEqualTo("new\n");
    assertThat(dist.resolve("state/worker-id")).content().isEqualTo("old\n");
  }
}
