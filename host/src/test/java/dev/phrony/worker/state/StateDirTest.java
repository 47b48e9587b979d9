package dev.phrony.worker.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.worker.testing.ChildJvm;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StateDirTest {
  @TempDir Path tmp;

  private final long self = ProcessHandle.current().pid();

  @Test
  void open_creates_an_owner_only_dir_and_writes_our_pid_into_the_lock() throws IOException {
    Path dir = tmp.resolve("a/b/state");
    try (StateDir sd = StateDir.open(dir)) {
      assertThat(sd.path()).isEqualTo(dir.toAbsolutePath());
      assertThat(Files.getPosixFilePermissions(dir))
          .isEqualTo(PosixFilePermissions.fromString("rwx------"));
      assertThat(Files.getPosixFilePermissions(dir.resolve("lock")))
          .isEqualTo(PosixFilePermissions.fromString("rw-------"));
      assertThat(Files.readString(dir.resolve("lock")).strip()).isEqualTo(Long.toString(self));
      assertThat(StateDir.holderPid(dir)).hasValue(self);
      assertThat(Files.getPosixFilePermissions(sd.subdir("outbox")))
          .isEqualTo(PosixFilePermissions.fromString("rwx------"));
    }
    assertThat(StateDir.holderPid(dir)).isEmpty();
  }

  private static java.util.Set<java.nio.file.attribute.PosixFilePermission> mode(String m) {
    return PosixFilePermissions.fromString(m);
  }

  @Test
  @SuppressWarnings("try") // held for its lock only
  void a_state_dir_of_an_earlier_run_is_kept_and_made_owner_only_again() throws IOException {
    Path dir = tmp.resolve("state");
    try (StateDir sd = StateDir.open(dir)) {
      sd.workerId(() -> "w-1");
      sd.subdir("outbox");
    }
    Files.setPosixFilePermissions(dir, mode("rwxr-x---"));
    Files.delete(dir.resolve(StateDir.MARKER_FILE)); // as an older version left it
    try (StateDir sd = StateDir.open(dir)) {
      assertThat(Files.getPosixFilePermissions(dir)).isEqualTo(mode("rwx------"));
      assertThat(sd.workerId(() -> "w-2")).isEqualTo("w-1");
    }
  }

  @Test
  @SuppressWarnings("try") // held for its lock only
  void an_empty_dir_of_this_user_is_used_and_its_mode_left_as_it_is() throws IOException {
    Path dir =
        Files.createDirectory(
            tmp.resolve("volume"), PosixFilePermissions.asFileAttribute(mode("rwxr-xr-x")));
    try (StateDir sd = StateDir.open(dir)) {
      assertThat(Files.getPosixFilePermissions(dir)).isEqualTo(mode("rwxr-xr-x"));
      assertThat(Files.getPosixFilePermissions(dir.resolve("lock"))).isEqualTo(mode("rw-------"));
    }
    try (StateDir sd = StateDir.open(dir)) {
      assertThat(Files.getPosixFilePermissions(dir))
          .as("now a state dir, made by the worker")
          .isEqualTo(mode("rwx------"));
    }
  }

  @Test
  void a_dir_holding_anything_else_is_refused_and_left_untouched() throws IOException {
    Path shared =
        Files.createDirectory(
            tmp.resolve("shared"), PosixFilePermissions.asFileAttribute(mode("rwxrwxrwx")));
    Files.setPosixFilePermissions(shared, mode("rwxrwxrwx")); // past the umask
    Files.writeString(shared.resolve("report.txt"), "someone else's");
    Files.createDirectory(shared.resolve("cache"));

    assertThatThrownBy(() -> StateDir.open(shared))
        .isInstanceOf(StateDirRefusedException.class)
        .hasMessage(
            "state dir "
                + shared
                + " is not a phrony-worker state dir: it holds 2"
                + " entries ('cache', 'report.txt'). Nothing was changed; point the state dir at a"
                + " new or empty directory of its own, e.g. "
                + shared.resolve("phrony-worker"));
    assertThat(Files.getPosixFilePermissions(shared)).isEqualTo(mode("rwxrwxrwx"));
    try (var list = Files.list(shared)) {
      assertThat(list.map(p -> p.getFileName().toString()))
          .containsExactlyInAnyOrder("report.txt", "cache");
    }

    Path link = Files.createSymbolicLink(tmp.resolve("link"), shared);
    assertThatThrownBy(() -> StateDir.open(link))
        .isInstanceOf(StateDirRefusedException.class)
        .hasMessageContaining("state dir " + link + " (" + shared.toRealPath() + ") is not a");
    assertThat(Files.getPosixFilePermissions(shared)).isEqualTo(mode("rwxrwxrwx"));
  }

  @Test
  void a_dir_of_another_user_is_refused_even_when_empty() throws IOException {
    Path dir = Files.createDirectory(tmp.resolve("theirs"));
    try {
      Files.setAttribute(dir, "unix:uid", 54321);
    } catch (IOException e) {
      org.junit.jupiter.api.Assumptions.abort("only root can give a dir away here: " + e);
    }
    assertThatThrownBy(() -> StateDir.open(dir))
        .isInstanceOf(StateDirRefusedException.class)
        .hasMessageContaining("belongs to uid 54321, not this user");
    assertThat(dir.resolve("lock")).doesNotExist();
  }

  @Test
  @SuppressWarnings("try") // held for its lock only
  void a_folder_of_the_state_dir_that_is_a_link_is_refused_not_followed() throws IOException {
    Path elsewhere =
        Files.createDirectory(
            tmp.resolve("elsewhere"), PosixFilePermissions.asFileAttribute(mode("rwxr-xr-x")));
    Path dir = tmp.resolve("state");
    try (StateDir sd = StateDir.open(dir)) {
      Files.createSymbolicLink(dir.resolve("outbox"), elsewhere);
      assertThatThrownBy(() -> sd.subdir("outbox")).hasMessageContaining("is a symbolic link");
    }
    assertThat(Files.getPosixFilePermissions(elsewhere)).isEqualTo(mode("rwxr-xr-x"));
  }

  @Test
  @SuppressWarnings("try") // held for its lock only
  void a_second_open_in_this_jvm_fails_naming_the_dir_and_pid_and_keeps_the_lock()
      throws Exception {
    Path dir = tmp.resolve("state");
    try (StateDir first = StateDir.open(dir)) {
      assertThatThrownBy(() -> StateDir.open(dir))
          .isInstanceOfSatisfying(
              StateDirLockedException.class,
              e -> {
                assertThat(e.getMessage())
                    .contains(dir.toAbsolutePath().toString())
                    .contains("pid " + self);
                assertThat(e.holderPid()).hasValue(self);
                assertThat(e.dir()).isEqualTo(dir.toAbsolutePath());
              });
      assertThatThrownBy(() -> StateDir.open(tmp.resolve("./state/../state")))
          .as("the same dir spelled differently")
          .isInstanceOf(StateDirLockedException.class);
      // The failed attempts must not have released the OS lock.
      ChildJvm.Result probe = ChildJvm.run(LockProbeMain.class, dir.toString());
      assertThat(probe.exitCode()).as(probe.output()).isEqualTo(2);
    }
    try (StateDir again = StateDir.open(dir)) {
      assertThat(again.path()).isEqualTo(dir.toAbsolutePath());
    }
  }

  @Test
  @SuppressWarnings("try") // held for its lock only
  void another_process_is_refused_with_the_dir_and_our_pid_and_gets_it_once_we_close()
      throws Exception {
    Path dir = tmp.resolve("state");
    try (StateDir sd = StateDir.open(dir)) {
      ChildJvm.Result r = ChildJvm.run(LockProbeMain.class, dir.toString());
      assertThat(r.exitCode()).as(r.output()).isEqualTo(2);
      assertThat(r.output())
          .contains("REFUSED state dir " + dir.toAbsolutePath())
          .contains("locked by another phrony-worker (pid " + self + ")");
    }
    ChildJvm.Result r = ChildJvm.run(LockProbeMain.class, dir.toString());
    assertThat(r.exitCode()).as(r.output()).isZero();
    assertThat(r.output()).startsWith("LOCKED by ");
  }

  @Test
  void the_worker_id_is_generated_once_and_kept() throws IOException {
    Path dir = tmp.resolve("state");
    AtomicInteger calls = new AtomicInteger();
    String id;
    try (StateDir sd = StateDir.open(dir)) {
      id =
          sd.workerId(
              () -> {
                calls.incrementAndGet();
                return dev.phrony.worker.work.WorkerIdentity.generateId();
              });
      assertThat(id).matches("[A-Za-z0-9.-]+-[0-9a-f]{8}");
      assertThat(sd.workerId(() -> "other-00000000")).isEqualTo(id);
      assertThat(Files.getPosixFilePermissions(dir.resolve("worker-id")))
          .isEqualTo(PosixFilePermissions.fromString("rw-------"));
    }
    try (StateDir sd = StateDir.open(dir)) {
      assertThat(sd.workerId(() -> "other-00000000")).isEqualTo(id);
    }
    assertThat(calls).hasValue(1);
  }

  @Test
  void an_unusable_worker_id_file_is_replaced() throws IOException {
    Path dir = tmp.resolve("state");
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("worker-id"), "bad id with spaces\n", StandardCharsets.UTF_8);
    try (StateDir sd = StateDir.open(dir)) {
      assertThat(sd.workerId(() -> "my_host-0badc0de")).isEqualTo("my_host-0badc0de");
    }
    assertThat(Files.readString(dir.resolve("worker-id"))).isEqualTo("my_host-0badc0de\n");
  }

  @Test
  void a_file_where_the_dir_should_be_is_a_clear_error() throws IOException {
    Path file = Files.writeString(tmp.resolve("state"), "x");
    assertThatThrownBy(() -> StateDir.open(file))
        .isInstanceOf(IOException.class)
        .hasMessageContaining(file.toString())
        .hasMessageContaining("not a directory");
  }
}
