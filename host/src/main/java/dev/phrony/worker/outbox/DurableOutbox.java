package dev.phrony.worker.outbox;

import dev.phrony.worker.state.StateDir;
import dev.phrony.worker.time.ExecutorScheduler;
import dev.phrony.worker.time.Scheduler;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link ResultOutbox} that keeps results of the calls its {@link Durability} selects on disk in
 * the state dir's {@code outbox/}, so they survive a crash of the worker, and records intents of
 * calls that must not run twice.
 *
 * <p>All results live in a {@link MemoryOutbox} (the index, and the whole story for non-durable
 * results); a durable result is also in the log ({@link LogWriter}), written and flushed before its
 * {@link #holdAsync} future completes. Concurrent holds are group-committed: they share one batch
 * and its flush. Releases, orphan marks and dropped intents are written lazily with the next batch.
 *
 * <p>At open it loads held and orphaned results and intents. An intent without a result is
 * <em>interrupted</em> (the process died while its handler ran): it is logged, listed, advertised
 * in {@code in_flight} and refused on re-invoke. Orphaned and interrupted records are pruned after
 * the orphan retention. Damaged files are copied into {@code corrupt/} and reported in {@link
 * #problems}; what could be read from them is kept.
 *
 * <p>If a batch cannot be written (disk full, I/O error), a durable result is <em>not</em> sent
 * un-persisted: its hold stays pending (the result in memory, its slot taken), the failure is
 * logged and {@linkplain #durabilityFailures counted}, {@link #diskProblem} says why (the worker
 * reports not-ready), and the write is retried with backoff; once the disk takes it, every waiting
 * hold completes and its result goes out. A failed intent fails its future instead, so the handler
 * does not run.
 *
 * <p>Time comes from the options: the clock stamps completions and orphan marks, and the scheduler
 * times the disk retry and {@link #pruneEvery}, so tests drive both.
 */
public final class DurableOutbox implements ResultOutbox, AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(DurableOutbox.class);

  public static final String OUTBOX_DIR = "outbox";
  public static final String CORRUPT_DIR = "corrupt";
  public static final Duration DEFAULT_ORPHAN_RETENTION = Duration.ofDays(7);

  /** How often a running worker prunes: retention is counted in days, so hourly is plenty. */
  public static final Duration PRUNE_PERIOD = Duration.ofHours(1);

  /**
   * How the outbox behaves.
   *
   * @param durability which results go to disk
   * @param orphanRetention how long orphaned and interrupted records are kept; null: forever
   * @param clock time of completions, orphan marks and pruning
   * @param scheduler times the disk retry and {@link #pruneEvery}, on {@code clock}; its owner
   *     closes it. Null: the outbox has a timer thread of its own, on the system's time
   */
  public record Options(
      Durability durability, Duration orphanRetention, InstantSource clock, Scheduler scheduler) {
    public Options {
      Objects.requireNonNull(durability, "durability");
      Objects.requireNonNull(clock, "clock");
      if (orphanRetention != null && orphanRetention.isNegative()) {
        throw new IllegalArgumentException("orphan retention must not be negative");
      }
      if (scheduler != null && !scheduler.clock().equals(clock)) {
        throw new IllegalArgumentException("the scheduler must run on the outbox's clock");
      }
    }

    /** Timers on a thread of the outbox's own. */
    public Options(Durability durability, Duration orphanRetention, InstantSource clock) {
      this(durability, orphanRetention, clock, null);
    }

    /** {@code writes}, 7 days, the system clock. */
    public static Options defaults() {
      return new Options(Durability.WRITES, DEFAULT_ORPHAN_RETENTION, InstantSource.system());
    }

    public Options withDurability(Durability d) {
      return new Options(d, orphanRetention, clock, scheduler);
    }

    /** All time from {@code s}: the timers, and its clock for timestamps and pruning. */
    public Options withScheduler(Scheduler s) {
      return new Options(durability, orphanRetention, s.clock(), s);
    }
  }

  private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

  private final Path dir;
  private final Options options;
  private final MemoryOutbox memory;
  private final Set<String> onDisk = ConcurrentHashMap.newKeySet();
  private final LogWriter journal;
  private final List<String> problems;
  private final AtomicLong durabilityFailures = new AtomicLong();
  private final DurableHolds holds;
  private final DurableIntents intents;
  private final Scheduler timers;
  private final DiskRoom room;

  /** The timer thread when the options bring no scheduler; closed with the outbox. */
  private final ExecutorScheduler ownTimers;

  /** Guards the prune timer and {@code closed}: a prune under it finds the log still open. */
  private final Object lifecycle = new Object();

  private Scheduler.Handle pruneTimer = Scheduler.NONE;
  private boolean closed;

  /** Serialises pruning and purging with re-holds of known calls. */
  private final Object removals = new Object();

  private DurableOutbox(
      Path dir, Options options, LogWriter journal, List<String> problems, DiskRoom room) {
    this.dir = dir;
    this.room = room;
    this.options = options;
    this.memory = new MemoryOutbox(options.clock());
    this.journal = journal;
    this.problems = problems;
    this.ownTimers =
        options.scheduler() == null ? new ExecutorScheduler("phrony-outbox-timer") : null;
    this.timers = ownTimers != null ? ownTimers : options.scheduler();
    this.intents =
        new DurableIntents(options.durability(), journal, options.clock(), durabilityFailures);
    this.holds =
        new DurableHolds(
            dir,
            journal,
            timers,
            durabilityFailures,
            r -> {
              onDisk.add(r.callId());
              held(r);
            });
  }

  /** Opens the outbox in {@code stateDir} (which this process has locked). */
  public static DurableOutbox open(StateDir stateDir, Options options) throws IOException {
    return open(stateDir, options, LogWriter.Tuning.DEFAULT);
  }

  static DurableOutbox open(StateDir stateDir, Options options, LogWriter.Tuning tuning)
      throws IOException {
    Path dir = stateDir.subdir(OUTBOX_DIR);
    return open(stateDir, options, tuning, DiskRoom.usableSpaceOf(dir));
  }

  /** The same, with the free space of the outbox's disk measured by {@code usable} (tests). */
  static DurableOutbox open(
      StateDir stateDir, Options options, LogWriter.Tuning tuning, LongSupplier usable)
      throws IOException {
    Path dir = stateDir.subdir(OUTBOX_DIR);
    DiskRoom room = new DiskRoom(dir, tuning.segmentBytes(), usable);
    LogReader.Loaded loaded = LogReader.read(dir, true);
    List<String> problems = loaded.problems();
    for (String p : problems) {
      log.warn("outbox damage found at start: {}", p);
    }
    LogWriter journal =
        LogWriter.start(
            dir, stateDir.path().resolve(CORRUPT_DIR), loaded, options.clock(), tuning, room);
    DurableOutbox o = new DurableOutbox(dir, options, journal, problems, room);
    try {
      o.load(loaded.state());
    } catch (RuntimeException e) {
      o.close();
      throw e;
    }
    return o;
  }

  private void load(LogState state) {
    Instant now = options.clock().instant();
    int orphaned = 0;
    for (LogRecord.Result r : state.results()) {
      memory.restore(r.result(), r.orphanedAt());
      onDisk.add(r.callId());
      orphaned += r.orphanedAt() == null ? 0 : 1;
    }
    int interrupted = intents.load(state.intents());
    log.info(
        "outbox {} opened: {} held, {} orphaned, {} interrupted; durability={}, orphan "
            + "retention={}{}",
        dir,
        memory.size() - orphaned,
        orphaned,
        interrupted,
        options.durability(),
        options.orphanRetention() == null ? "forever" : options.orphanRetention(),
        problems.isEmpty() ? "" : "; " + problems.size() + " problems (see corrupt/)");
    prune(now);
  }

  // ---- HeldResults ----

  @Override
  public CompletableFuture<Void> holdAsync(HeldResult result) {
    if (memory.find(result.callId()).isPresent()) {
      synchronized (removals) { // a re-hold (re-invoke of an orphan) must not race a prune
        reHold(result);
      }
      return DONE;
    }
    String callId = result.callId();
    boolean durable =
        options.durability().isDurable(result.sideEffectClass())
            || onDisk.contains(callId); // keep the disk copy in step with memory
    if (!durable) {
      held(result);
      return DONE;
    }
    return holds.write(result);
  }

  @Override
  public CompletableFuture<Void> holdInMemoryAsync(HeldResult result) {
    if (memory.find(result.callId()).isPresent() || onDisk.contains(result.callId())) {
      return holdAsync(result);
    }
    held(result);
    return DONE;
  }

  /**
   * Why durable results cannot be written now ({@code No space left on device}), or empty when the
   * last write succeeded: while present the worker is not ready.
   */
  @Override
  public Optional<String> diskProblem() {
    return holds.problem();
  }

  /** Durable holds waiting for the disk. */
  public int waitingForDisk() {
    return holds.waiting();
  }

  /**
   * Holds again a result that is already held (the runtime re-invoked an orphaned call). Its
   * payload is on disk already, so the record that clears the orphan mark is queued without
   * waiting. A crash before it is written leaves the result orphaned, which a later re-invoke
   * repairs the same way.
   */
  private void reHold(HeldResult result) {
    memory.hold(result);
    if (onDisk.contains(result.callId())) {
      journal.appendLater(new LogRecord.Result(result, null));
    }
  }

  /** The result is as safe as it gets: into the index; its intent, if any, is superseded. */
  private void held(HeldResult result) {
    String callId = result.callId();
    memory.hold(result);
    if (intents.superseded(callId) && !onDisk.contains(callId)) {
      journal.appendLater(new LogRecord.DropIntent(callId)); // not superseded on disk: drop it
    }
  }

  @Override
  public Optional<HeldResult> find(String callId) {
    return memory.find(callId);
  }

  @Override
  public void release(String callId) {
    memory.release(callId);
    if (onDisk.remove(callId)) {
      journal.appendLater(new LogRecord.Release(callId));
    }
  }

  @Override
  public void markOrphaned(String callId) {
    if (memory.isOrphaned(callId)) {
      return;
    }
    Instant now = options.clock().instant();
    MemoryOutbox.Entry e = memory.markOrphaned(callId, now);
    if (e != null && onDisk.contains(callId)) {
      journal.appendLater(new LogRecord.Orphan(callId, e.orphanedAt()));
    }
  }

  @Override
  public boolean isOrphaned(String callId) {
    return memory.isOrphaned(callId);
  }

  @Override
  public Collection<String> pendingIds() {
    return memory.pendingIds();
  }

  @Override
  public int size() {
    return memory.size();
  }

  // ---- CallIntents: see DurableIntents ----

  @Override
  public boolean needsIntent(String sideEffectClass) {
    return intents.needsIntent(sideEffectClass);
  }

  @Override
  public CompletableFuture<Void> recordIntentAsync(IntentRecord intent) {
    return intents.recordIntentAsync(intent);
  }

  /** Forgets an intent (an operator or retention cleared it, or its handler never started). */
  @Override
  public void dropIntent(String callId) {
    intents.dropIntent(callId);
  }

  @Override
  public void markInterrupted(String callId) {
    intents.markInterrupted(callId);
  }

  @Override
  public boolean wasInterrupted(String callId) {
    return intents.wasInterrupted(callId);
  }

  @Override
  public Collection<String> interruptedIds() {
    return intents.interruptedIds();
  }

  // ---- operations ----

  /**
   * Drops orphaned results orphaned, and interrupted calls interrupted, at least the orphan
   * retention before {@code now}. Called at open; call it periodically (hourly is plenty).
   *
   * @return the pruned call ids
   */
  public List<String> prune(Instant now) {
    Duration retention = options.orphanRetention();
    if (retention == null) {
      return List.of();
    }
    Instant cutoff = now.minus(retention);
    List<String> pruned = new ArrayList<>();
    synchronized (removals) {
      for (MemoryOutbox.Entry e : memory.entries()) {
        String id = e.result().callId();
        if (e.orphaned() && !e.orphanedAt().isAfter(cutoff) && memory.release(id, e)) {
          if (onDisk.remove(id)) {
            journal.appendLater(new LogRecord.Release(id));
          }
          pruned.add(id);
          log.info(
              "pruned orphaned call {} ({}, session {}), orphaned since {} (retention {})",
              id,
              e.result().toolKey(),
              e.result().sessionId(),
              e.orphanedAt(),
              retention);
        }
      }
      intents.prune(cutoff, retention, pruned);
    }
    return pruned;
  }

  /**
   * Prunes every {@code period} from now on (on the options' scheduler and clock) until the outbox
   * closes; a second call replaces the first.
   */
  public void pruneEvery(Duration period) {
    if (period.isNegative() || period.isZero()) {
      throw new IllegalArgumentException("prune period must be positive, not " + period);
    }
    synchronized (lifecycle) {
      if (closed) {
        throw new IllegalStateException("the outbox is closed");
      }
      pruneTimer.cancel();
      pruneTimer = timers.schedule(() -> prunePeriodically(period), period);
    }
  }

  private void prunePeriodically(Duration period) {
    synchronized (lifecycle) {
      if (closed) {
        return;
      }
      pruneTimer = timers.schedule(() -> prunePeriodically(period), period);
      prune(options.clock().instant()); // under the lock close takes: the log is still open
    }
  }

  /** Forgets {@code callId} whatever its state (operator purge). True if it was known. */
  public boolean remove(String callId) {
    synchronized (removals) {
      boolean known = memory.find(callId).isPresent();
      release(callId);
      if (intents.has(callId)) {
        intents.dropIntent(callId);
        known = true;
      }
      return known;
    }
  }

  /** Every held, orphaned, interrupted and running call, oldest first. */
  public List<OutboxEntry> entries() {
    List<OutboxEntry> out = new ArrayList<>();
    for (MemoryOutbox.Entry e : memory.entries()) {
      HeldResult r = e.result();
      out.add(
          new OutboxEntry(
              r.callId(),
              e.orphaned() ? OutboxEntry.State.ORPHANED : OutboxEntry.State.HELD,
              r.toolKey(),
              r.sessionId(),
              r.sideEffectClass(),
              null,
              r.completedAt(),
              e.orphaned() ? e.orphanedAt() : completedOrEpoch(r),
              onDisk.contains(r.callId()),
              r.outcome()));
    }
    intents.addEntries(out);
    out.sort(Comparator.comparing(OutboxEntry::since).thenComparing(OutboxEntry::callId));
    return out;
  }

  static Instant completedOrEpoch(HeldResult r) {
    return r.completedAt() == null ? Instant.EPOCH : r.completedAt();
  }

  /** Damage found at open: one line per problem; the damaged files are in {@code corrupt/}. */
  public List<String> problems() {
    return problems;
  }

  /** Device flushes so far (two per group-committed batch, plus compactions). */
  public long flushCount() {
    return journal.flushCount();
  }

  /** Batches written so far (each with one {@code fdatasync} of its file). */
  public long batchCount() {
    return journal.batchCount();
  }

  /** The room left on the outbox's disk: too little for a segment makes the worker not ready. */
  public DiskRoom room() {
    return room;
  }

  /** Durable holds and intents whose write failed (each retry that fails counts again). */
  public long durabilityFailures() {
    return durabilityFailures.get();
  }

  public Durability durability() {
    return options.durability();
  }

  /** Returns once every release, orphan mark and dropped intent so far is on disk. */
  public void sync() {
    journal.sync();
  }

  long compactionCount() {
    return journal.compactionCount();
  }

  /** Writes what is pending and stops the writer; the state dir stays locked by its owner. */
  @Override
  public void close() throws IOException {
    synchronized (lifecycle) {
      closed = true;
      pruneTimer.cancel();
    }
    holds.close();
    if (ownTimers != null) {
      ownTimers.close();
    }
    journal.close();
  }
}
