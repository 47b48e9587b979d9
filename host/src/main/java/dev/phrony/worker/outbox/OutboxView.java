package dev.phrony.worker.outbox;

import dev.phrony.worker.state.StateDir;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A read-only look at a state dir's outbox, for operators. Takes no lock and writes nothing, so it
 * works while a worker runs; a compaction racing the read makes it read again.
 */
public final class OutboxView {
  private static final int ATTEMPTS = 10;

  private final Path stateDir;
  private final List<OutboxEntry> entries;
  private final List<String> problems;
  private final OptionalLong workerPid;

  private OutboxView(
      Path stateDir, List<OutboxEntry> entries, List<String> problems, OptionalLong workerPid) {
    this.stateDir = stateDir;
    this.entries = entries;
    this.problems = problems;
    this.workerPid = workerPid;
  }

  /**
   * Reads the outbox of {@code stateDir}.
   *
   * @throws NoSuchFileException if {@code stateDir} is not a directory
   */
  public static OutboxView read(Path stateDir) throws IOException {
    if (!Files.isDirectory(stateDir)) {
      throw new NoSuchFileException(stateDir.toString(), null, "no state dir here");
    }
    OptionalLong pid = StateDir.holderPid(stateDir);
    Path dir = stateDir.resolve(DurableOutbox.OUTBOX_DIR);
    for (int attempt = 1; ; attempt++) {
      try {
        LogReader.Loaded loaded = LogReader.read(dir, false);
        return new OutboxView(
            stateDir, toEntries(loaded.state(), pid.isPresent()), loaded.problems(), pid);
      } catch (NoSuchFileException e) {
        if (attempt == ATTEMPTS) {
          throw new IOException("the outbox in " + dir + " kept changing while being read", e);
        }
      }
    }
  }

  private static List<OutboxEntry> toEntries(LogState state, boolean workerRunning) {
    List<OutboxEntry> out = new ArrayList<>();
    for (LogRecord.Result r : state.results()) {
      HeldResult h = r.result();
      boolean orphaned = r.orphanedAt() != null;
      out.add(
          new OutboxEntry(
              h.callId(),
              orphaned ? OutboxEntry.State.ORPHANED : OutboxEntry.State.HELD,
              h.toolKey(),
              h.sessionId(),
              h.sideEffectClass(),
              null,
              h.completedAt(),
              orphaned ? r.orphanedAt() : DurableOutbox.completedOrEpoch(h),
              true,
              h.outcome()));
    }
    for (LogRecord.Intent i : state.intents()) {
      IntentRecord in = i.intent();
      // An unflagged intent is running if its worker is alive, else its worker died mid-call.
      OutboxEntry.State s =
          i.interruptedAt() == null && workerRunning
              ? OutboxEntry.State.RUNNING
              : OutboxEntry.State.INTERRUPTED;
      out.add(
          new OutboxEntry(
              in.callId(),
              s,
              in.toolKey(),
              in.sessionId(),
              in.sideEffectClass(),
              in.startedAt(),
              null,
              i.interruptedAt() == null ? in.startedAt() : i.interruptedAt(),
              true,
              null));
    }
    out.sort(Comparator.comparing(OutboxEntry::since).thenComparing(OutboxEntry::callId));
    return out;
  }

  public Path stateDir() {
    return stateDir;
  }

  /** Every durable held, orphaned, interrupted and running call, oldest first. */
  public List<OutboxEntry> entries() {
    return entries;
  }

  public Optional<OutboxEntry> find(String callId) {
    return entries.stream().filter(e -> e.callId().equals(callId)).findFirst();
  }

  /** Damage found while reading (not moved aside: only the worker does that, at its start). */
  public List<String> problems() {
    return problems;
  }

  /** The pid of the live worker holding the state dir, if any. */
  public OptionalLong workerPid() {
    return workerPid;
  }
}
