package dev.phrony.worker.plugin;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.FakeScheduler;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The plugins folder's watch on a fake clock (the rescan drives it, no WatchService) except for the
 * one test of real filesystem events.
 */
class PluginWatcherTest {
  private static final Duration SETTLE = Duration.ofSeconds(1);
  private static final Duration RESCAN = Duration.ofMillis(100);
  private static final Duration MS = Duration.ofMillis(1);
  private static final Duration GIVE_UP = Duration.ofSeconds(5);

  /** Long enough for any change to be seen by a rescan and settle. */
  private static final Duration ENOUGH = RESCAN.plus(SETTLE).multipliedBy(3);

  @TempDir Path tmp;

  private Path plugins;
  private Path staging;
  private final FakeScheduler timers = new FakeScheduler();
  private final AtomicInteger fired = new AtomicInteger();
  private PluginWatcher watcher;

  @BeforeEach
  void folders() throws IOException {
    plugins = Files.createDirectories(tmp.resolve("plugins"));
    staging = Files.createDirectories(tmp.resolve("staging"));
  }

  @AfterEach
  void close() {
    if (watcher != null) {
      watcher.close();
    }
  }

  private void start(Runnable onChange) {
    watcher = new PluginWatcher(plugins, timers, SETTLE, RESCAN, onChange, false, GIVE_UP);
    watcher.start();
  }

  private void start() {
    start(fired::incrementAndGet);
  }

  /** A real jar; a longer marker makes a bigger one, so a rewrite always changes the size. */
  private static byte[] jar(String marker) throws IOException {
    Manifest manifest = new Manifest();
    manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (JarOutputStream out = new JarOutputStream(bytes, manifest)) {
      out.putNextEntry(new JarEntry("marker/" + marker + ".txt"));
      out.write(marker.repeat(100).getBytes(StandardCharsets.UTF_8));
      out.closeEntry();
    }
    return bytes.toByteArray();
  }

  /** Copies a jar in from outside the folder, as an operator would. */
  private Path copyIn(String name, byte[] content) throws IOException {
    Path src = staging.resolve(name.replace('/', '_'));
    Files.write(src, content);
    Path target = plugins.resolve(name);
    Files.createDirectories(target.getParent());
    return Files.copy(src, target);
  }

  @Test
  void copiedJarFiresOnceOnlyAfterTheFolderWasQuietForSettle() throws IOException {
    start();
    copyIn("a.jar", jar("a"));
    timers.advance(RESCAN); // the rescan sees it: the settle time starts here

    timers.advance(SETTLE.minus(MS));
    assertThat(fired).as("just under the settle time").hasValue(0);
    timers.advance(MS);
    assertThat(fired).hasValue(1);

    timers.advance(Duration.ofMinutes(1));
    assertThat(fired).as("once").hasValue(1);
  }

  @Test
  void halfWrittenJarHoldsTheChangeBackWhileItMayStillBeWritten() throws IOException {
    byte[] whole = jar("half");
    start();
    Path jar = plugins.resolve("b.jar");
    Files.write(jar, Arrays.copyOf(whole, whole.length / 2));
    watcher.poke();
    timers.advance(SETTLE.plus(GIVE_UP).minus(MS));
    assertThat(fired)
        .as("a jar that does not open, unchanged for less than the give-up time")
        .hasValue(0);

    Files.write(jar, whole);
    watcher.poke();
    timers.advance(SETTLE.minus(MS));
    assertThat(fired).as("complete, but not quiet for the settle time yet").hasValue(0);
    timers.advance(MS);
    assertThat(fired).hasValue(1);
  }

  @Test
  void copyThatKeepsGrowingIsNeverGivenUpOn() throws IOException {
    byte[] whole = jar("slow");
    start();
    Path jar = plugins.resolve("slow.jar");
    for (int n = 1; n < 40; n++) { // a slow copy: a little more every settle time, for 40 s
      Files.write(jar, Arrays.copyOf(whole, Math.max(1, whole.length * n / 40)));
      watcher.poke();
      timers.advance(SETTLE);
    }
    assertThat(fired).as("still changing: still being written").hasValue(0);
  }

  @Test
  void corruptJarIsHandedOverOnceItStaysTheSameAndNeverBlocksALaterPlugin() throws IOException {
    start();
    Files.write(plugins.resolve("broken.jar"), "not a zip".getBytes(StandardCharsets.UTF_8));
    watcher.poke();
    timers.advance(SETTLE.plus(GIVE_UP).minus(MS));
    assertThat(fired).as("may still be being written").hasValue(0);
    timers.advance(SETTLE);
    assertThat(fired)
        .as("unchanged for the give-up time: broken, reloaded (and reported)")
        .hasValue(1);

    copyIn("good.jar", jar("good"));
    watcher.poke();
    timers.advance(SETTLE);
    assertThat(fired).as("a plugin moved in afterwards, at the settle time as any").hasValue(2);

    copyIn("empty.jar", jar("no-handlers"));
    timers.advance(ENOUGH);
    assertThat(fired).as("and the one after it").hasValue(3);
  }

  @Test
  void changesWithinSettleKeepPostponing() throws IOException {
    start();
    Duration gap = SETTLE.minus(RESCAN);
    for (String name : List.of("c1.jar", "c2.jar", "c3.jar", "c4.jar")) {
      copyIn(name, jar(name));
      watcher.poke();
      timers.advance(gap);
      assertThat(fired).as("still changing after %s", name).hasValue(0);
    }
    timers.advance(RESCAN.minus(MS));
    assertThat(fired).as("just under the settle time after the last change").hasValue(0);
    timers.advance(MS);
    assertThat(fired).hasValue(1);
  }

  @Test
  void changeRevertedBeforeTheSettleCheckFiresNothing() throws IOException {
    start();
    Path jar = copyIn("gone.jar", jar("gone"));
    watcher.poke();
    timers.advance(SETTLE.dividedBy(2));
    Files.delete(jar);
    watcher.poke();
    timers.advance(Duration.ofMinutes(1));
    assertThat(fired).as("back to the loaded state").hasValue(0);

    copyIn("later.jar", jar("later"));
    timers.advance(ENOUGH);
    assertThat(fired).as("a later change still fires").hasValue(1);
  }

  @Test
  void removedJarFires() throws IOException {
    Path jar = copyIn("keep.jar", jar("keep"));
    start();
    timers.advance(ENOUGH);
    assertThat(fired).as("the state at start is already loaded").hasValue(0);

    Files.delete(jar);
    timers.advance(ENOUGH);
    assertThat(fired).hasValue(1);
  }

  @Test
  void changedLibraryOfAFolderPluginFires() throws IOException {
    copyIn("p/p.jar", jar("p"));
    Path dep = copyIn("p/lib/dep.jar", jar("dep"));
    start();
    timers.advance(ENOUGH);
    assertThat(fired).hasValue(0);

    Files.write(dep, jar("dep-2.0"));
    timers.advance(ENOUGH);
    assertThat(fired).hasValue(1);
  }

  @Test
  void hiddenFilesNeverFire() throws IOException {
    copyIn("p/p.jar", jar("p"));
    copyIn("p/lib/dep.jar", jar("dep"));
    start();
    for (String hidden :
        List.of(
            ".a.jar",
            ".staging/b.jar",
            ".staging/lib/c.jar",
            "p/.d.jar",
            "p/.git/config",
            "p/lib/.e.jar",
            "p/lib/.x/f.jar")) {
      copyIn(hidden, jar("hidden"));
      timers.advance(ENOUGH);
      assertThat(fired).as(hidden).hasValue(0);
    }
  }

  @Test
  void callbackThatThrowsDoesNotStopLaterChanges() throws IOException {
    start(
        () -> {
          fired.incrementAndGet();
          throw new IllegalStateException("reload failed");
        });
    copyIn("d.jar", jar("d"));
    timers.advance(ENOUGH);
    assertThat(fired).hasValue(1);

    copyIn("e.jar", jar("e"));
    timers.advance(ENOUGH);
    assertThat(fired).hasValue(2);
  }

  @Test
  void brokenJarAlreadyLoadedDoesNotHoldBackLaterChanges() throws IOException {
    Files.write(plugins.resolve("broken.jar"), "not a zip".getBytes(StandardCharsets.UTF_8));
    start();
    copyIn("good.jar", jar("good"));
    timers.advance(ENOUGH);
    assertThat(fired).as("only new or changed jars are checked").hasValue(1);
  }

  @Test
  void folderThatVanishesIsNotAnEmptyFolder() throws IOException {
    copyIn("keep.jar", jar("keep"));
    start();
    Path away = tmp.resolve("away");
    Files.move(plugins, away);
    timers.advance(ENOUGH);
    assertThat(fired).as("gone: not every plugin removed").hasValue(0);

    Files.move(away, plugins); // a move keeps the files' times: the loaded state again
    timers.advance(ENOUGH);
    assertThat(fired).hasValue(0);

    copyIn("new.jar", jar("new"));
    timers.advance(ENOUGH);
    assertThat(fired).as("watching continued").hasValue(1);
  }

  @Test
  void closeCancelsTheTimers() throws IOException {
    start();
    copyIn("a.jar", jar("a"));
    watcher.poke();
    assertThat(timers.pending()).as("rescan and settle check").isEqualTo(2);
    watcher.close();
    watcher.close();
    assertThat(timers.pending()).isZero();
    timers.advance(ENOUGH);
    assertThat(fired).hasValue(0);
  }

  @Test
  void fileEventsDriveItWithoutTheRescan() throws IOException {
    copyIn("p/lib/dep.jar", jar("dep"));
    watcher =
        new PluginWatcher(
            plugins, timers, SETTLE, Duration.ofHours(1), fired::incrementAndGet, true, GIVE_UP);
    watcher.start();
    assertThat(watchThreadAlive()).isTrue();

    copyIn("a.jar", jar("a"));
    awaitFired(1);
    Files.write(plugins.resolve("p/lib/dep.jar"), jar("dep-2.0")); // lib/ watched from the start
    awaitFired(2);
    copyIn("q/lib/x.jar", jar("x")); // new folders...
    awaitFired(3);
    Files.write(plugins.resolve("q/lib/x.jar"), jar("x-2.0")); // ...are watched as they appear
    awaitFired(4);

    watcher.close();
    assertThat(watchThreadAlive()).as("the event thread stops").isFalse();
  }

  /** Moves fake time while waiting (25x real time at most): an hour's rescan never comes. */
  private void awaitFired(int n) {
    Await.until(
        "callback #" + n,
        () -> {
          timers.advance(Duration.ofMillis(50));
          return fired.get() >= n;
        },
        Duration.ofSeconds(10));
    assertThat(fired).hasValue(n);
  }

  private static boolean watchThreadAlive() {
    return Thread.getAllStackTraces().keySet().stream()
        .anyMatch(t -> t.getName().equals(PluginWatcher.THREAD_NAME) && t.isAlive());
  }
}
