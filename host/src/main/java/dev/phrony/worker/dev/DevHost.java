package dev.phrony.worker.dev;

import dev.phrony.worker.plugin.LoadResult;
import dev.phrony.worker.plugin.PluginUnloader;
import dev.phrony.worker.reload.Generations;
import dev.phrony.worker.reload.LiveReload;
import dev.phrony.worker.reload.NotStartingException;
import dev.phrony.worker.reload.PluginReloader;
import dev.phrony.worker.reload.WorkerPlugins;
import dev.phrony.worker.work.WorkOptions;
import dev.phrony.worker.work.WorkerIdentity;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * dev's worker, assembled from the pieces {@code run}'s {@code serve.Worker} is made of: the
 * plugins folder loaded as {@code run} loads it ({@link WorkerPlugins}), served by the {@link
 * DevServer}'s embedded host, and live ({@link LiveReload}). Unlike {@code run}'s it keeps nothing
 * on disk (no state dir: results are held in memory) and has no ops endpoint (the control API
 * stands in), so an author's inner loop leaves no state behind.
 *
 * @param dir the plugins folder
 * @param strict whether a plugin problem refuses a start or a reload
 * @param plugins what it starts with
 * @param host what {@link DevServer} registers
 */
public record DevHost(Path dir, boolean strict, WorkerPlugins plugins, DevServer.Host host) {

  /**
   * Loads {@code dir} (every operator setting at the plugin's value: dev has no {@code --handler}).
   *
   * @throws NotStartingException if {@code strict} and a plugin has a problem
   */
  public static DevHost load(Path dir, boolean strict) throws NotStartingException {
    WorkerPlugins plugins = WorkerPlugins.load(dir, strict, List.of());
    LoadResult loaded = plugins.loaded();
    WorkerIdentity identity =
        WorkerIdentity.resolve(
            Optional.empty(), System.getenv(), WorkerIdentity::generateId, loaded.imageDigest());
    return new DevHost(
        dir,
        strict,
        plugins,
        new DevServer.Host(
            loaded.catalog(), identity, dir, loaded.problems(), WorkOptions.DEFAULT_DRAIN_TIMEOUT));
  }

  /**
   * Serves the folder live on {@code dev}'s host: a reload (the folder changing once watched,
   * SIGHUP) takes the new code, whose input schemas then check an approval's edited arguments, and
   * the next call reaches it ({@link DevServer#retireOlderThan}). Each reload's outcome line goes
   * to {@code reloaded}. Closing it stops the watching.
   */
  public LiveReload serveLive(DevServer dev, Consumer<String> reloaded) {
    LiveReload live =
        new LiveReload(
            dir,
            timers ->
                new PluginReloader(
                    dir,
                    strict,
                    List.of(),
                    plugins.loaded(),
                    plugins.applied(),
                    Generations.of(dev.host().orElseThrow()),
                    generation -> {},
                    outcome -> {
                      if (outcome.result() == PluginReloader.Result.RELOADED
                          && outcome.change().advertisementChanged()) {
                        dev.retireOlderThan(outcome.generation()); // before the line says so
                      }
                      reloaded.accept(outcome.message());
                    },
                    true, // the console shows each outcome
                    PluginUnloader.DEFAULT_MAX_LEAKED,
                    timers));
    dev.schemasFrom(() -> live.reloader().served().applied().served());
    return live;
  }
}
