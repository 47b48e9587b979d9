package dev.phrony.worker.reload;

import dev.phrony.worker.config.HandlerOverrides;
import dev.phrony.worker.plugin.CatalogChange;
import dev.phrony.worker.plugin.LoadProblem;
import dev.phrony.worker.plugin.LoadResult;
import dev.phrony.worker.plugin.PluginDirectoryException;
import dev.phrony.worker.plugin.PluginLoader;
import dev.phrony.worker.plugin.PluginUnloader;
import dev.phrony.worker.time.Scheduler;
import dev.phrony.worker.work.HostThreads;
import dev.phrony.worker.work.WorkClient;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Live plugin reload: loads the plugins folder again (a plugin whose jars did not change keeps its
 * classloader and handler instances, see {@link PluginLoader#reload}), applies the operator's
 * handler settings, and has the worker's {@link Generations} (its Work client) serve the result as
 * a new plugin generation (or, when nothing advertised changed, on the running one). Classloaders
 * the new set no longer uses are closed once no call runs their code. Reloads run one at a time, on
 * a thread of their own; the folder watcher, SIGHUP and {@code POST /plugins/reload} all end up
 * here.
 */
public final class PluginReloader implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PluginReloader.class);

  /** How a reload ended ({@code phrony_worker_plugin_reloads_total{outcome}}). */
  public enum Result {
    /** A new set is served (as a new generation, or rebound on the running one). */
    RELOADED("reloaded"),
    /** Nothing changed: nothing was done. */
    UNCHANGED("unchanged"),
    /** {@code --strict} and a problem, or no handler left: the running generation stays. */
    REFUSED("refused"),
    /** The folder could not be read: the running generation stays. */
    FAILED("failed");

    private final String label;

    Result(String label) {
      this.label = label;
    }

    public String label() {
      return label;
    }
  }

  /**
   * What one reload did.
   *
   * @param result how it ended
   * @param generation the generation served after it
   * @param change what it changed, by key (nothing unless reloaded)
   * @param problems every problem the load found (as {@code list-handlers} reports them)
   * @param message one line for a person
   */
  public record Outcome(
      Result result,
      int generation,
      CatalogChange change,
      List<LoadProblem> problems,
      String message) {}

  /**
   * What is served now: the load, the handler settings applied to it, its generation, and when it
   * was loaded.
   */
  public record Served(
      LoadResult loaded, HandlerOverrides.Applied applied, int generation, Instant loadedAt) {}

  /** How long a reload waits for its generation to register before it reports anyway. */
  static final Duration REGISTER_WAIT = Duration.ofSeconds(10);

  private final Path dir;
  private final boolean strict;
  private final List<HandlerOverrides.Rule> rules;
  private final Generations client;
  private final IntConsumer keepGeneration;
  private final Consumer<Outcome> listener;
  private final boolean listenerShowsOutcomes;
  private final Scheduler timers;
  private final PluginLoader loader = new PluginLoader();
  private final ExecutorService thread =
      Executors.newSingleThreadExecutor(
          Thread.ofPlatform().name("phrony-plugin-reload").daemon().factory());
  private volatile Served served;

  /** Told of each plugin's leaked class loader count as it grows (a metric). */
  private volatile BiConsumer<String, Integer> onLeak = (plugin, n) -> {};

  /** Unloads what a reload replaced, and refuses reloads of a plugin that leaks its loaders. */
  private final PluginUnloader unloader;

  /**
   * The problems of the last load, each logged at WARN once while it lasts (on the reload thread):
   * a broken jar left in the folder is not warned about again at every later reload.
   */
  private Set<LoadProblem> reported;

  /**
   * @param first what the worker loaded at start (and serves as generation {@code generation})
   * @param keepGeneration keeps the number of a generation in the state dir before it registers
   * @param listener told of every reload's outcome (metrics, the dev console)
   * @param listenerShowsOutcomes true when {@code listener} shows each outcome to a person itself
   *     (dev's console): the log then keeps it at DEBUG, so it is not shown twice
   * @param maxLeakedLoaders leaked class loaders of one plugin at which its reloads are refused
   * @param timers the bound on a generation's register wait ({@link #REGISTER_WAIT}), and the clock
   *     of {@link Served#loadedAt}
   */
  public PluginReloader(
      Path dir,
      boolean strict,
      List<HandlerOverrides.Rule> rules,
      LoadResult first,
      HandlerOverrides.Applied applied,
      Generations client,
      IntConsumer keepGeneration,
      Consumer<Outcome> listener,
      boolean listenerShowsOutcomes,
      int maxLeakedLoaders,
      Scheduler timers) {
    this.unloader =
        new PluginUnloader(
            maxLeakedLoaders, HostThreads::release, (plugin, n) -> onLeak.accept(plugin, n));
    this.dir = dir;
    this.strict = strict;
    this.rules = List.copyOf(rules);
    this.client = client;
    this.keepGeneration = keepGeneration;
    this.listener = listener;
    this.listenerShowsOutcomes = listenerShowsOutcomes;
    this.timers = timers;
    this.served = new Served(first, applied, client.generation(), timers.clock().instant());
    this.reported = Set.copyOf(first.problems()); // the start logged those
  }

  /** {@code metric} is told of each plugin's leaked class loader count as it grows. */
  public void onLeakedLoader(BiConsumer<String, Integer> metric) {
    this.onLeak = metric;
  }

  /** Replaced class loaders still being unloaded or watched. */
  public int unloadsPending() {
    return unloader.pending();
  }

  /** Leaked class loaders by plugin (see {@link PluginUnloader}). */
  public Map<String, Integer> leakedLoaders() {
    return unloader.leaked();
  }

  /** What is served now. */
  public Served served() {
    return served;
  }

  /**
   * Reloads the plugins folder, after any reload already under way; {@code trigger} names what
   * asked (for the log). Completes once the new set is served (registered, when it is a new
   * generation); the old one may still wind down.
   */
  public CompletableFuture<Outcome> reload(String trigger) {
    try {
      return CompletableFuture.supplyAsync(() -> reloadNow(trigger), thread);
    } catch (java.util.concurrent.RejectedExecutionException e) { // closed: the worker stops
      Served now = served;
      return CompletableFuture.completedFuture(
          new Outcome(
              Result.REFUSED,
              now.generation(),
              none(),
              List.of(),
              "plugins not reloaded (" + trigger + "): the worker is stopping"));
    }
  }

  private Outcome reloadNow(String trigger) {
    Served now = served;
    LoadResult next;
    try {
      next = loader.reload(dir, now.loaded());
    } catch (PluginDirectoryException e) {
      return done(
          new Outcome(
              Result.FAILED,
              now.generation(),
              none(),
              List.of(),
              "plugins not reloaded (" + trigger + "): " + e.getMessage()));
    }
    for (LoadProblem p : next.problems()) {
      if (reported.contains(p)) {
        log.debug("plugin {} still not loaded: {}", p.plugin(), p.reason());
      } else {
        log.warn("plugin {} not loaded: {}", p.plugin(), p.reason());
      }
    }
    reported = Set.copyOf(next.problems()); // one that goes away and comes back is warned again
    HandlerOverrides.Applied applied = HandlerOverrides.apply(rules, next.catalog());
    CatalogChange change = CatalogChange.between(now.applied().served(), applied.served());
    if (strict && next.hasProblems()) {
      return refuse(
          next,
          now,
          trigger,
          "--strict and " + next.problems().size() + " plugin problem(s)",
          " (see 'list-handlers')");
    }
    if (applied.served().size() == 0) {
      return refuse(next, now, trigger, "no handler would be left to serve", "");
    }
    if (change.none()) {
      discard(next, now.loaded()); // the running load stays what later reloads start from
      return done(
          new Outcome(
              Result.UNCHANGED,
              now.generation(),
              change,
              next.problems(),
              "plugins unchanged (" + trigger + ")"));
    }
    List<ClassLoader> replaced = now.loaded().unusedBy(next);
    List<String> refusals =
        replaced.stream()
            .map(l -> unloader.refusal(l.getName()))
            .flatMap(Optional::stream)
            .toList();
    if (!refusals.isEmpty()) {
      return refuse(next, now, trigger, String.join("; ", refusals), "");
    }
    int generation = now.generation() + (change.advertisementChanged() ? 1 : 0);
    if (change.advertisementChanged()) {
      keepGeneration.accept(generation); // a restart from here on comes back as this one
    }
    WorkClient.Handover handover = client.serve(applied.served(), generation, next.imageDigest());
    served = new Served(next, applied, generation, timers.clock().instant());
    handover
        .retired()
        .thenCompose(v -> client.whenUnused(Set.copyOf(replaced)))
        .thenRun(
            () -> {
              log.info("unloading {} plugin classloader(s) no call uses any more", replaced.size());
              unloader.unload(replaced); // a loader that stays in memory is a WARN of its own
            });
    boolean registered = awaitRegistered(handover);
    return done(
        new Outcome(
            Result.RELOADED,
            generation,
            change,
            next.problems(),
            "plugins_reloaded "
                + change.summary()
                + " generation="
                + generation
                + (change.advertisementChanged() ? "" : " (same advertisement: nothing sent)")
                + " trigger="
                + trigger
                + (registered ? "" : " (not registered yet: the runtime does not answer)")));
  }

  /**
   * Waits, boundedly, until the new set is served (a new generation registered): a reload's outcome
   * then means its keys take calls. The old generation serves on meanwhile.
   */
  private boolean awaitRegistered(WorkClient.Handover handover) {
    CompletableFuture<Boolean> registered = new CompletableFuture<>();
    Scheduler.Handle bound = timers.schedule(() -> registered.complete(false), REGISTER_WAIT);
    handover.registered().whenComplete((v, e) -> registered.complete(e == null));
    try {
      return registered.get();
    } catch (ExecutionException e) {
      return false; // not reached: only ever completed with a value
    } catch (InterruptedException e) { // closed: the worker stops
      Thread.currentThread().interrupt();
      return false;
    } finally {
      bound.cancel();
    }
  }

  /** Closes the classloaders {@code next} opened that the running set does not use. */
  /** Refuses {@code next} for {@code why}: the running generation serves on. */
  private Outcome refuse(LoadResult next, Served now, String trigger, String why, String tail) {
    discard(next, now.loaded());
    return done(
        new Outcome(
            Result.REFUSED,
            now.generation(),
            none(),
            next.problems(),
            "plugins not reloaded ("
                + trigger
                + "): "
                + why
                + "; generation "
                + now.generation()
                + " serves on"
                + tail));
  }

  private static void discard(LoadResult next, LoadResult running) {
    LoadResult.close(next.unusedBy(running));
  }

  private Outcome done(Outcome o) {
    if (listenerShowsOutcomes) {
      log.debug("{}", o.message());
    } else if (o.result() == Result.RELOADED || o.result() == Result.UNCHANGED) {
      log.info("{}", o.message());
    } else {
      log.warn("{}", o.message());
    }
    try {
      listener.accept(o);
    } catch (RuntimeException e) {
      log.warn("a reload listener failed", e);
    }
    return o;
  }

  private static CatalogChange none() {
    return new CatalogChange(List.of(), List.of(), List.of());
  }

  @Override
  public void close() {
    thread.shutdownNow();
    unloader.close();
  }
}
