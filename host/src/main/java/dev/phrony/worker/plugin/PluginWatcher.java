package dev.phrony.worker.plugin;

import dev.phrony.worker.time.Scheduler;
import java.io.IOException;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.FileVisitOption;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.zip.ZipFile;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches a plugins directory while the worker serves and calls back once a change has settled, so
 * the worker can reload its plugins live.
 *
 * <p>Two things trigger a check: events from a {@link WatchService} on the directory and its
 * sub-folders (depth &lt;= 2, new ones registered as they appear), and a periodic rescan on the
 * {@link Scheduler}, the fallback for filesystems that send no events (network mounts, some
 * container volumes). A check takes a snapshot of every regular file (depth &lt;= 3, hidden names
 * skipped at every level) with its size and modification time. A snapshot unlike the last one seen
 * (re)starts a settle timer; once the folder has been quiet for {@code settle}, and no new or
 * changed jar is still half-written, the snapshot becomes the loaded state and {@code onChange}
 * runs. The state at {@link #start} counts as already loaded, and going back to the loaded state
 * before the timer ends runs nothing.
 *
 * <p>A new or changed jar that does not open as a zip holds the change back while it may still be
 * being written; once it has stayed the same for {@link #DEFAULT_GIVE_UP} it is broken, not
 * half-written, and the change is handed over anyway (the loader reports the jar and why), so one
 * corrupt file never freezes the folder.
 *
 * <p>{@code onChange} runs on the scheduler's thread, outside the watcher's lock, one at a time
 * (the scheduler runs one task at a time), so give the watcher a scheduler of its own: a reload,
 * and a rescan of a slow mount, hold that thread.
 */
public final class PluginWatcher implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PluginWatcher.class);

  public static final Duration DEFAULT_SETTLE = Duration.ofSeconds(1);
  public static final Duration DEFAULT_RESCAN = Duration.ofSeconds(5);

  /**
   * How long a jar that does not open must stay unchanged (size and time) before it counts as
   * broken rather than still being written: a copy that stalls longer than this is loaded as it is
   * (and reported), then again once it completes.
   */
  public static final Duration DEFAULT_GIVE_UP = Duration.ofSeconds(5);

  static final String THREAD_NAME = "phrony-plugin-watch";

  /** dir/plugin/lib/x.jar is the deepest file a plugin has. */
  private static final int FILE_DEPTH = 3;

  /** A new snapshot after registering new folders catches files made before they were watched. */
  private static final int MAX_WALKS = 4;

  private record Stamp(long size, FileTime modified) {}

  /** A jar that did not open as a zip, as it was when first found so, and since when. */
  private record Unreadable(Stamp stamp, Instant since) {}

  /** A folder that could not be read, and why: each is logged once while it lasts. */
  private record Problem(Path path, String reason) {}

  /** One walk: the files (null when the folder itself could not be read), folders, problems. */
  private record Walk(
      SortedMap<Path, Stamp> files, Map<Path, Object> dirs, Set<Problem> problems) {}

  /** A registered folder; the file key tells a folder recreated under the same name apart. */
  private record Watched(Object fileKey, WatchKey key) {}

  private enum State {
    NEW,
    RUNNING,
    CLOSED
  }

  private final Path dir;
  private final Scheduler scheduler;
  private final Duration settle;
  private final Duration rescan;
  private final Runnable onChange;
  private final boolean watchEvents;
  private final Duration giveUp;

  private final Object lock = new Object();
  private State state = State.NEW;
  private SortedMap<Path, Stamp> loaded;
  private SortedMap<Path, Stamp> seen;
  private boolean settlePending;

  /** Tells a settle check that was replaced (but had already started) to do nothing. */
  private long settleGen;

  private Scheduler.Handle settleHandle = Scheduler.NONE;
  private Scheduler.Handle rescanHandle = Scheduler.NONE;
  private Set<Problem> reported = Set.of();
  private List<Path> partialReported = List.of();
  private final Map<Path, Unreadable> unreadable = new HashMap<>();
  private WatchService watchService;
  private final Map<Path, Watched> watched = new HashMap<>();
  private final Set<Path> registerFailed = new HashSet<>();
  private Thread thread;

  /**
   * @param dir the plugins folder
   * @param settle how long the folder must be quiet before a change is handed over
   * @param rescan how often the folder is scanned even without events
   * @param onChange what runs after a settled change
   */
  public PluginWatcher(
      Path dir, Scheduler scheduler, Duration settle, Duration rescan, Runnable onChange) {
    this(dir, scheduler, settle, rescan, onChange, true, DEFAULT_GIVE_UP);
  }

  /**
   * {@code watchEvents} false: no WatchService, only the rescan (for tests); {@code giveUp}: see
   * {@link #DEFAULT_GIVE_UP}.
   */
  PluginWatcher(
      Path dir,
      Scheduler scheduler,
      Duration settle,
      Duration rescan,
      Runnable onChange,
      boolean watchEvents,
      Duration giveUp) {
    this.dir = Objects.requireNonNull(dir, "dir");
    this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
    this.settle = Objects.requireNonNull(settle, "settle");
    this.rescan = Objects.requireNonNull(rescan, "rescan");
    this.onChange = Objects.requireNonNull(onChange, "onChange");
    this.watchEvents = watchEvents;
    this.giveUp = Objects.requireNonNull(giveUp, "giveUp");
    if (settle.isNegative()) {
      throw new IllegalArgumentException("settle must not be negative: " + settle);
    }
    if (rescan.isNegative() || rescan.isZero()) {
      throw new IllegalArgumentException("rescan must be positive: " + rescan);
    }
  }

  /**
   * Takes the initial snapshot (the state already loaded), starts watching for events and schedules
   * the rescan.
   *
   * @throws IllegalStateException when already started or closed
   */
  public void start() {
    synchronized (lock) {
      if (state != State.NEW) {
        throw new IllegalStateException(
            "plugin watcher already " + state.name().toLowerCase(Locale.ROOT));
      }
      state = State.RUNNING;
      watchService = watchEvents ? newWatchService() : null;
      SortedMap<Path, Stamp> s = snapshot(); // registers the folders, before the thread waits
      loaded = s == null ? Collections.emptySortedMap() : s;
      seen = loaded;
      if (watchService != null) {
        WatchService ws = watchService;
        thread = Thread.ofPlatform().name(THREAD_NAME).daemon().start(() -> takeEvents(ws));
      }
      rescanHandle = scheduler.schedule(this::rescanTick, rescan);
      log.debug(
          "plugin watch started dir={} files={} events={} settle_ms={} rescan_ms={}",
          dir,
          loaded.size(),
          watchService != null,
          settle.toMillis(),
          rescan.toMillis());
    }
  }

  /** Checks the folder now; a change found starts (or restarts) the settle timer. */
  public void poke() {
    synchronized (lock) {
      if (state != State.RUNNING) {
        return;
      }
      SortedMap<Path, Stamp> s = snapshot();
      if (s == null) {
        return; // gone or unreadable (logged): that is not "every plugin removed"
      }
      if (!settlePending && s.equals(loaded)) {
        seen = s;
        return;
      }
      if (!s.equals(seen)) {
        seen = s;
        scheduleSettle();
      }
    }
  }

  /** Stops the event thread and the timers; idempotent. */
  @Override
  public void close() {
    Thread t;
    WatchService ws;
    synchronized (lock) {
      if (state == State.CLOSED) {
        return;
      }
      state = State.CLOSED;
      settleHandle.cancel();
      rescanHandle.cancel();
      t = thread;
      ws = watchService;
      thread = null;
      watchService = null;
      watched.clear();
    }
    if (ws != null) {
      try {
        ws.close(); // wakes the thread out of take()
      } catch (IOException e) {
        log.debug("closing the plugin watch service failed dir={}", dir, e);
      }
    }
    if (t != null && t != Thread.currentThread()) {
      try {
        t.join(Duration.ofSeconds(1)); // bounded: close never hangs on a stuck filesystem
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private WatchService newWatchService() {
    try {
      return dir.getFileSystem().newWatchService();
    } catch (IOException | UnsupportedOperationException e) {
      log.info(
          "plugin watch without file events dir={} reason=\"{}\" rescan_ms={}",
          dir,
          e,
          rescan.toMillis());
      return null;
    }
  }

  private void takeEvents(WatchService ws) {
    try {
      while (true) {
        WatchKey key = ws.take();
        do {
          key.pollEvents(); // which file changed does not matter: the snapshot finds out
          key.reset(); // an invalid key (folder gone) is re-registered by the next snapshot
        } while ((key = ws.poll()) != null); // a burst (a big copy) makes one check
        try {
          poke();
        } catch (RuntimeException e) {
          log.warn("plugin watch check failed dir={}", dir, e);
        }
      }
    } catch (InterruptedException | ClosedWatchServiceException e) {
      // closed: the watcher is stopping
    }
  }

  private void rescanTick() {
    try {
      poke();
    } finally {
      synchronized (lock) {
        if (state == State.RUNNING) {
          rescanHandle = scheduler.schedule(this::rescanTick, rescan); // after, so none pile up
        }
      }
    }
  }

  private void scheduleSettle() {
    settleHandle.cancel();
    long gen = ++settleGen;
    settlePending = true;
    settleHandle = scheduler.schedule(() -> settleCheck(gen), settle);
  }

  private void settleCheck(long gen) {
    String plugins;
    synchronized (lock) {
      if (state != State.RUNNING || gen != settleGen) {
        return;
      }
      SortedMap<Path, Stamp> s = snapshot();
      if (s == null) {
        scheduleSettle(); // decide once the folder can be read again
        return;
      }
      if (!s.equals(seen)) {
        seen = s;
        scheduleSettle();
        return;
      }
      if (s.equals(loaded)) {
        settlePending = false;
        partialReported = List.of();
        unreadable.clear();
        log.debug("plugin change reverted dir={}", dir);
        return;
      }
      List<Path> broken = new ArrayList<>();
      List<Path> partial = new ArrayList<>();
      sortUnreadable(s, broken, partial);
      if (!partial.isEmpty()) {
        if (!partial.equals(partialReported)) {
          partialReported = partial;
          log.debug("plugin jar still being written dir={} jars={}", dir, join(partial));
        }
        scheduleSettle(); // never hand over a half-written jar
        return;
      }
      if (!broken.isEmpty()) {
        log.info(
            "plugin jar does not open and has not changed for {} s: reloading without waiting for"
                + " it (the reload reports why) dir={} jars={}",
            giveUp.toSeconds(),
            dir,
            join(broken));
      }
      plugins = String.join(",", changedPlugins(loaded, s));
      loaded = s;
      settlePending = false;
      partialReported = List.of();
      unreadable.clear();
    }
    log.info("plugins changed dir={} plugins={}", dir, plugins);
    try {
      onChange.run();
    } catch (RuntimeException e) {
      log.warn("plugin reload after a change failed dir={}", dir, e); // the next change still fires
    }
  }

  /**
   * The new or changed jars that do not open as a zip, into {@code partial} (maybe still being
   * copied) or {@code broken} (unchanged for {@link #giveUp} since first found so). Jars unchanged
   * since the loaded state are not checked, so a broken plugin already reported by the loader does
   * not hold back later changes.
   */
  private void sortUnreadable(SortedMap<Path, Stamp> s, List<Path> broken, List<Path> partial) {
    Instant now = scheduler.clock().instant();
    Map<Path, Unreadable> still = new HashMap<>();
    for (Map.Entry<Path, Stamp> e : s.entrySet()) {
      Path rel = e.getKey();
      if (!rel.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(".jar")
          || e.getValue().equals(loaded.get(rel))) {
        continue;
      }
      if (e.getValue().size() < 0) {
        continue; // a link that leads nowhere: not being written, and the loader reports it
      }
      try {
        new ZipFile(dir.resolve(rel).toFile()).close();
      } catch (IOException ex) {
        Unreadable u = unreadable.get(rel);
        if (u == null || !u.stamp().equals(e.getValue())) {
          u = new Unreadable(e.getValue(), now); // new, or still changing: its time starts now
        }
        still.put(rel, u);
        (Duration.between(u.since(), now).compareTo(giveUp) >= 0 ? broken : partial).add(rel);
      }
    }
    unreadable.clear();
    unreadable.putAll(still);
  }

  /** The plugins (immediate children) whose files differ between two snapshots. */
  private static Set<String> changedPlugins(
      SortedMap<Path, Stamp> before, SortedMap<Path, Stamp> after) {
    Set<String> names = new TreeSet<>();
    Set<Path> all = new HashSet<>(before.keySet());
    all.addAll(after.keySet());
    for (Path rel : all) {
      if (!Objects.equals(before.get(rel), after.get(rel))) {
        names.add(rel.getName(0).toString());
      }
    }
    return names;
  }

  private static String join(List<Path> paths) {
    return String.join(",", paths.stream().map(Path::toString).toList());
  }

  /**
   * A snapshot of the folder, under the lock; null when the folder itself cannot be read. Watches
   * the folders it finds that are not watched yet, then looks again, so a file made in a new folder
   * before the folder was watched is not missed.
   */
  private SortedMap<Path, Stamp> snapshot() {
    for (int i = 1; ; i++) {
      Walk w = walk();
      report(w.problems());
      if (w.files() == null) {
        return null;
      }
      if (!watchNew(w.dirs()) || i == MAX_WALKS) {
        return w.files();
      }
    }
  }

  private void report(Set<Problem> problems) {
    for (Problem p : problems) {
      if (!reported.contains(p)) {
        log.warn("plugin watch cannot read path={} reason=\"{}\"", p.path(), p.reason());
      }
    }
    reported = problems; // a problem that goes away and comes back is logged again
  }

  private Walk walk() {
    Set<Problem> problems = new HashSet<>();
    if (!Files.isDirectory(dir)) {
      problems.add(new Problem(dir, Files.exists(dir) ? "not a directory" : "does not exist"));
      return new Walk(null, Map.of(), problems);
    }
    SortedMap<Path, Stamp> files = new TreeMap<>();
    Map<Path, Object> dirs = new LinkedHashMap<>();
    boolean[] rootFailed = {false};
    try {
      // Links followed, as the loader follows them (e.g. a Kubernetes ConfigMap's files).
      Files.walkFileTree(
          dir,
          EnumSet.of(FileVisitOption.FOLLOW_LINKS),
          FILE_DEPTH,
          new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes attrs) {
              if (!d.equals(dir) && hidden(d)) {
                return FileVisitResult.SKIP_SUBTREE;
              }
              dirs.put(d, attrs.fileKey());
              return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path f, BasicFileAttributes attrs) {
              if (!f.equals(dir) && !hidden(f) && attrs.isRegularFile()) {
                files.put(dir.relativize(f), new Stamp(attrs.size(), attrs.lastModifiedTime()));
              }
              return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path f, IOException e) {
              failed(f, e);
              return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) {
              if (e != null) {
                failed(d, e);
              }
              return FileVisitResult.CONTINUE;
            }

            private void failed(Path f, IOException e) {
              if (!f.equals(dir) && !hidden(f) && Files.isSymbolicLink(f)) {
                // A link that leads nowhere or back up (self -> .): a change like any other, whose
                // reload reports it (the loader does not load it).
                files.put(dir.relativize(f), linkStamp(f));
                return;
              }
              if (f.equals(dir)) {
                rootFailed[0] = true;
                problems.add(new Problem(f, e.toString()));
              } else if (!hidden(f) && !(e instanceof NoSuchFileException)) {
                problems.add(new Problem(f, e.toString())); // gone mid-walk is just a change
              }
            }
          });
    } catch (IOException e) {
      rootFailed[0] = true;
      problems.add(new Problem(dir, e.toString()));
    }
    return new Walk(rootFailed[0] ? null : files, dirs, problems);
  }

  /** The stamp of a link itself (not of what it leads to), with no size. */
  private static Stamp linkStamp(Path link) {
    try {
      return new Stamp(
          -1,
          Files.readAttributes(link, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS)
              .lastModifiedTime());
    } catch (IOException e) {
      return new Stamp(-1, FileTime.fromMillis(0)); // gone meanwhile: the next walk sees it
    }
  }

  private static boolean hidden(Path p) {
    Path name = p.getFileName();
    return name != null && name.toString().startsWith(".");
  }

  /** Registers the folders not watched yet; true when any was. */
  private boolean watchNew(Map<Path, Object> dirs) {
    if (watchService == null) {
      return false;
    }
    watched.keySet().retainAll(dirs.keySet());
    boolean added = false;
    for (Map.Entry<Path, Object> d : dirs.entrySet()) {
      Watched w = watched.get(d.getKey());
      if (w != null && w.key().isValid() && Objects.equals(w.fileKey(), d.getValue())) {
        continue;
      }
      try {
        WatchKey key =
            d.getKey()
                .register(
                    watchService,
                    StandardWatchEventKinds.ENTRY_CREATE,
                    StandardWatchEventKinds.ENTRY_DELETE,
                    StandardWatchEventKinds.ENTRY_MODIFY);
        watched.put(d.getKey(), new Watched(d.getValue(), key));
        registerFailed.remove(d.getKey());
        added = true;
      } catch (ClosedWatchServiceException e) {
        return false;
      } catch (IOException e) {
        if (registerFailed.add(d.getKey())) { // e.g. the inotify watch limit: the rescan covers it
          log.warn(
              "plugin watch cannot watch path={} reason=\"{}\" rescan_ms={}",
              d.getKey(),
              e,
              rescan.toMillis());
        }
      }
    }
    registerFailed.retainAll(dirs.keySet());
    return added;
  }
}
