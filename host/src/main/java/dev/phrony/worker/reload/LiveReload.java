package dev.phrony.worker.reload;

import dev.phrony.worker.plugin.PluginWatcher;
import dev.phrony.worker.time.ExecutorScheduler;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;

/**
 * A plugins folder served live: its {@link PluginReloader}, and the {@link PluginWatcher} (on
 * timers of its own) that asks the reloader for a reload when the folder changes. {@code run} and
 * {@code dev} serve their folder so; SIGHUP and {@code POST /plugins/reload} ask the same reloader.
 */
public final class LiveReload implements AutoCloseable {
  private final PluginReloader reloader;
  private final ExecutorScheduler timers;
  private final PluginWatcher watcher;

  /** Takes {@code reloader} over (closed with this); nothing is watched before {@link #watch}. */
  public LiveReload(PluginReloader reloader, Path dir) {
    this.reloader = reloader;
    this.timers = new ExecutorScheduler("phrony-plugin-watch-timer");
    this.watcher =
        new PluginWatcher(
            dir,
            timers,
            PluginWatcher.DEFAULT_SETTLE,
            PluginWatcher.DEFAULT_RESCAN,
            () -> reloader.reload("folder changed"));
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
    timers.close();
    reloader.close();
  }
}
