package dev.phrony.worker.plugin;

import dev.phrony.worker.time.Scheduler;
import java.io.IOException;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.zip.ZipFile;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches a plugins folder while the worker serves, and runs a callback once a change has
 * settled: the folder has been quiet for {@code settle} and every jar in it opens as a zip (a
 * jar still being copied is never handed over). Filesystem events ({@link WatchService}) make it
 * prompt; a rescan every {@code rescan} makes it work where a filesystem sends none (network
 * mounts, some container volumes). Timers come from the injected {@link Scheduler}.
 */
public final class PluginWatcher implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PluginWatcher.class);

  public static final Duration DEFAULT_SETTLE = Duration.ofSeconds(1);
  public static final Duration DEFAULT_RESCAN = Duration.ofSeconds(5);
  /** Plugin folder, its lib/, their files: deep enough for every layout the loader reads. */
  private static final int DEPTH = 3;

  /** What a file looked like: enough to tell that it changed or is still being written. */
  record Stamp(long size, long modifiedMillis) {}

  private final Path dir;
  private final Scheduler scheduler;
  private final Duration settle;
  private final Duration rescan;
  private final Runnable onChange;
  private final boolean watchEvents;
  private final Object lock = new Object();

  // ---- under lock ----
  private Map<Path, Stamp> loaded = Map.of();
  private Map<Path, Stamp> seen = Map.of();
  private Scheduler.Handle settleCheck = Scheduler.NONE;
  private Scheduler.Handle rescanTimer = Scheduler.NONE;
  private boolean settling;
  private boolean closed;
  private String lastProblem;
  private WatchService events;
  private final Set<Path> watched = new HashSet<>();
  private Thread eventThread;

  public PluginWatcher(Path dir, Scheduler scheduler, Duration settle, Duration rescan,
      Runnable onChange) {
    this(dir, scheduler, settle, rescan, onChange, true);
  }

  /** {@code watchEvents} false: the rescan alone drives it (tests, and filesystems without events). */
  PluginWatcher(Path dir, Scheduler scheduler, Duration settle, Duration rescan,
      Runnable onChange, boolean watchEvents) {
    this.dir = dir;
    this.scheduler = scheduler;
    this.settle = settle;
    this.rescan = rescan;
    this.onChange = onChange;
    this.watchEvents = watchEvents;
  }

  /** Takes the state already loaded (no callback for it) and starts watching. */
  public void start() {
    synchronized (lock) {
      loaded = snapshot();
      seen = loaded;
      scheduleRescan();
      if (watchEvents) {
        startEvents();
      }
    }
  }

  /** Checks the folder now (a filesystem event, or anyone who knows it changed). */
  public void poke() {
    synchronized (lock) {
      if (closed) {
        return;
      }
      Map<Path, Stamp> now = snapshot();
      if (now.equals(seen)) {
        return; // nothing new: a settle check already pending will decide
      }
      seen = now;
      if (!settling && now.equals(loaded)) {
        return;
      }
      scheduleSettleCheck(); // debounce: the folder must stay quiet for a whole settle time
    }
  }

  private void scheduleSettleCheck() {
    settleCheck.cancel();
    settling = true;
    settleCheck = scheduler.schedule(this::settleCheck, settle);
  }

  private void settleCheck() {
    synchronized (lock) {
      if (closed) {
        return;
      }
      Map<Path, Stamp> now = snapshot();
      if (!now.equals(seen)) {
        seen = now;
        scheduleSettleCheck();
        return;
      }
      Path partial = firstUnreadableJar(now);
      if (partial != null) {
        log.debug("plugin jar not complete yet, waiting jar={}", partial);
        scheduleSettleCheck();
        return;
      }
      settling = false;
      if (now.equals(loaded)) {
        return; // changed and changed back
      }
      loaded = now;
    }
    try {
      onChange.run();
    } catch (RuntimeException e) {
      log.warn("plugin reload after a folder change failed dir={}", dir, e);
    }
  }

  private void scheduleRescan() {
    rescanTimer = scheduler.schedule(() -> {
      poke();
      synchronized (lock) {
        if (!closed) {
          scheduleRescan();
        }
      }
    }, rescan);
  }

  /** Every regular file below the folder (hidden names skipped), with its size and time. */
  private Map<Path, Stamp> snapshot() {
    Map<Path, Stamp> out = new TreeMap<>();
    try {
      walk(dir, 1, out);
      lastProblem = null;
    } catch (IOException e) {
      String problem = e.toString();
      if (!problem.equals(lastProblem)) {
        lastProblem = problem;
        log.warn("plugins folder cannot be read, watching on dir={} error={}", dir, problem);
      }
    }
    return Map.copyOf(out);
  }

  private void walk(Path folder, int depth, Map<Path, Stamp> out) throws IOException {
    try (DirectoryStream<Path> children = Files.newDirectoryStream(folder)) {
      for (Path child : children) {
        if (child.getFileName().toString().startsWith(".")) {
          continue;
        }
        BasicFileAttributes a;
        try {
          a = Files.readAttributes(child, BasicFileAttributes.class);
        } catch (IOException e) {
          continue; // removed while listed
        }
        if (a.isDirectory() && depth < DEPTH) {
          walk(child, depth + 1, out);
          if (events != null && watched.add(child)) {
            register(child);
          }
        } else if (a.isRegularFile()) {
          out.put(dir.relativize(child), new Stamp(a.size(), a.lastModifiedTime().toMillis()));
        }
      }
    }
  }

  /** A jar that does not open as a zip yet (being copied), or null. */
  private Path firstUnreadableJar(Map<Path, Stamp> files) {
    for (Path p : files.keySet()) {
      if (!p.getFileName().toString().toLowerCase(java.util.Locale.ROOT).endsWith(".jar")) {
        continue;
      }
      try (ZipFile z = new ZipFile(dir.resolve(p).toFile())) {
        Objects.requireNonNull(z.getName());
      } catch (IOException e) {
        return p;
      }
    }
    return null;
  }

  private void startEvents() {
    try {
      events = FileSystems.getDefault().newWatchService();
    } catch (IOException | UnsupportedOperationException e) {
      log.info("no filesystem events for the plugins folder ({}); rescanning it every {} s",
          e.toString(), rescan.toSeconds());
      return;
    }
    watched.add(dir);
    register(dir);
    snapshot(); // registers the folders below it
    WatchService ws = events;
    eventThread = Thread.ofPlatform().name("phrony-plugin-watch").daemon().start(() -> {
      try {
        while (true) {
          WatchKey key = ws.take();
          key.pollEvents();
          key.reset();
          poke();
        }
      } catch (InterruptedException | ClosedWatchServiceException e) {
        // closed
      }
    });
  }

  private void register(Path folder) {
    try {
      folder.register(events, StandardWatchEventKinds.ENTRY_CREATE,
          StandardWatchEventKinds.ENTRY_DELETE, StandardWatchEventKinds.ENTRY_MODIFY);
    } catch (IOException e) {
      log.debug("folder not watched for events (the rescan covers it) folder={} error={}",
          folder, e.toString());
    }
  }

  @Override
  public void close() {
    WatchService ws;
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
      settleCheck.cancel();
      rescanTimer.cancel();
      ws = events;
    }
    if (ws != null) {
      try {
        ws.close();
      } catch (IOException e) {
        log.debug("closing the plugins folder's watch failed", e);
      }
    }
  }
}
