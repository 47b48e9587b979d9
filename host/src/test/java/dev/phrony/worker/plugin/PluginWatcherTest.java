package dev.phrony.worker.plugin;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.Await;
import dev.phrony.worker.testing.FakeScheduler;
import dev.phrony.worker.time.ExecutorScheduler;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The plugins folder's watch, on a fake clock: debounce, half-written jars, and what is ignored. */
@SuppressWarnings("try") // each watcher is used through the folder, not by name
class PluginWatcherTest {
  private static final Duration SETTLE = Duration.ofSeconds(1);
  private static final Duration RESCAN = Duration.ofMillis(200);

  @TempDir
  Path dir;

  private final FakeScheduler timers = new FakeScheduler();
  private final AtomicInteger fired = new AtomicInteger();

  private PluginWatcher watcher(Runnable onChange) {
    PluginWatcher w = new PluginWatcher(dir, timers, SETTLE, RESCAN, onChange, false);
    w.start();
    return w;
  }

  private PluginWatcher watcher() {
    return watcher(fired::incrementAndGet);
  }

  private static byte[] jar(String text) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (JarOutputStream out = new JarOutputStream(bytes)) {
      out.putNextEntry(new JarEntry("a.txt"));
      out.write(text.repeat(200).getBytes(StandardCharsets.UTF_8));
      out.closeEntry();
    }
    return bytes.toByteArray();
  }

  /** Moves fake time in rescan steps, as a running worker's timers would. */
  private void advance(Duration d) {
    for (Duration left = d; left.isPositive(); left = left.minus(RESCAN)) {
      timers.advance(left.compareTo(RESCAN) < 0 ? left : RESCAN);
    }
  }

  @Test
  void a_copied_jar_fires_once_after_the_folder_has_been_quiet_for_the_settle_time()
      throws IOException {
    try (PluginWatcher w = watcher()) {
      Files.write(dir.resolve("a.jar"), jar("a"));
      advance(RESCAN); // the rescan sees it
      advance(SETTLE.minus(RESCAN.dividedBy(2)));
      assertThat(fired).as("not before the settle time").hasValue(0);
      advance(RESCAN);
      assertThat(fired).hasValue(1);
      advance(Duration.ofSeconds(10));
      assertThat(fired).as("once").hasValue(1);
    }
  }

  @Test
  void a_half_written_jar_is_never_handed_over_until_it_is_complete() throws IOException {
    byte[] whole = jar("b");
    try (PluginWatcher w = watcher()) {
      Files.write(dir.resolve("b.jar"), Arrays.copyOf(whole, whole.length / 2));
      advance(Duration.ofSeconds(30));
      assertThat(fired).as("a zip that does not open yet").hasValue(0);
      Files.write(dir.resolve("b.jar"), whole);
      advance(SETTLE.plus(RESCAN.multipliedBy(2)));
      assertThat(fired).hasValue(1);
    }
  }

  @Test
  void changes_that_keep_coming_postpone_the_reload() throws IOException {
    try (PluginWatcher w = watcher()) {
      for (int i = 0; i < 10; i++) {
        Files.write(dir.resolve("c.jar"), jar("c" + i));
        advance(SETTLE.dividedBy(2));
        assertThat(fired).as("still changing after %d writes", i + 1).hasValue(0);
      }
      advance(SETTLE.plus(RESCAN));
      assertThat(fired).hasValue(1);
    }
  }

  @Test
  void a_reverted_change_fires_nothing_hidden_files_never_and_removals_and_lib_changes_do()
      throws IOException {
    Files.write(dir.resolve("keep.jar"), jar("k"));
    Path lib = Files.createDirectories(dir.resolve("folder-plugin/lib"));
    Files.write(dir.resolve("folder-plugin/p.jar"), jar("p"));
    Files.write(lib.resolve("dep.jar"), jar("d"));
    try (PluginWatcher w = watcher()) {
      Files.write(dir.resolve("gone.jar"), jar("g"));
      advance(RESCAN);
      Files.delete(dir.resolve("gone.jar"));
      advance(SETTLE.multipliedBy(3));
      assertThat(fired).as("changed and changed back").hasValue(0);

      Files.write(dir.resolve(".upload.tmp"), jar("h"));
      Files.createDirectories(dir.resolve(".hidden"));
      Files.write(dir.resolve(".hidden/x.jar"), jar("x"));
      advance(SETTLE.multipliedBy(3));
      assertThat(fired).as("hidden names").hasValue(0);

      Files.write(lib.resolve("dep.jar"), jar("d2"));
      advance(SETTLE.multipliedBy(3));
      assertThat(fired).as("a library of a folder plugin").hasValue(1);

      Files.delete(dir.resolve("keep.jar"));
      advance(SETTLE.multipliedBy(3));
      assertThat(fired).as("a removed jar").hasValue(2);
    }
  }

  @Test
  void a_callback_that_throws_does_not_stop_the_watch() throws IOException {
    try (PluginWatcher w = watcher(() -> {
      fired.incrementAndGet();
      throw new IllegalStateException("reload failed");
    })) {
      Files.write(dir.resolve("d.jar"), jar("d"));
      advance(SETTLE.multipliedBy(3));
      Files.write(dir.resolve("e.jar"), jar("e"));
      advance(SETTLE.multipliedBy(3));
      assertThat(fired).hasValue(2);
    }
  }

  @Test
  void filesystem_events_bring_a_copied_jar_without_waiting_for_a_rescan() throws Exception {
    try (ExecutorScheduler real = new ExecutorScheduler("watch-test");
        PluginWatcher w = new PluginWatcher(dir, real, Duration.ofMillis(100),
            Duration.ofHours(1), fired::incrementAndGet)) {
      w.start();
      Path tmp = dir.resolve(".f.tmp");
      Files.write(tmp, jar("f"));
      Files.move(tmp, dir.resolve("f.jar"));
      Await.until("reloaded on the event", () -> fired.get() == 1, Duration.ofSeconds(20));
    }
  }
}
