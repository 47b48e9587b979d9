package dev.phrony.worker.reload;

import dev.phrony.worker.plugin.PluginWatcher;
import dev.phrony.worker.time.ExecutorScheduler;
import dev.phrony.worker.time.Scheduler;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * A plugins folder served live: its {@link PluginReloader}, and the {@link PluginWatcher} that asks
 * the reloader for a reload when the folder changes, both on timers of their own. {@code run} and
 * {@code dev} serve their folder so; SIGHUP and {@code POST /plugins/reload} ask the same reloader.
 */
public final class LiveReload implements AutoCloseable {
  private final PluginReloader reloader;
  private final ExecutorScheduler timers;
  private final PluginWatcher watcher;

  /**
   * Watches {@code dir} for the reloader {@code reloader} makes on this one's timers (closed with
   * this); nothing is watched before {@link #watch}.
   */
  public LiveReload(Path dir, Function<Scheduler, PluginReloader> reloader) {
    this.timers = new ExecutorScheduler("phrony-plugin-timer");
    try {
      this.reloader = reloader.apply(timers);
    } catch (RuntimeException | Error e) {
      timers.close();
      throw e;
    }
    this.watcher =
        new PluginWatcher(
            dir,
            timers,
            PluginWatcher.DEFAULT_SETTLE,
            PluginWatcher.DEFAULT_RESCAN,
            () -> this.reloader.reload("folder changed"));
  }

  public PluginReloader reloader() {
    return reloader;
  }

  /** Starts watching the folder: a change, once settled, reloads it. */
  public void watch() {
    watcher.start();
  }

  /** Reloads now; {@code trigger} names what asked (see {@link PluginReloader#reload}). */
  public CompletableFuture<PluginReloader.Outcome> reload(String trigger) {
    return reloader.reload(trigger);
  }

  /**
   * Refuses every reload from now on, for a worker that is leaving: a watcher still starting, or a
   * change it sees later, finds the reloader closed (its end comes with {@link #close}).
   */
  public void refuse() {
    reloader.close();
  }

  @Override
  public void close() {
    watcher.close();
    reloader.close(); // interrupts a reload waiting on a timer here
    timers.close();
  }
}
