package dev.phrony.worker.outbox;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Compaction: when enough files are mostly dead, the live state is written as one snapshot
 * (published like any file) and then the older files are deleted. Runs on the writer thread,
 * between batches, with no file open for appends.
 */
final class LogCompactor {
  private static final Logger log = LoggerFactory.getLogger(LogCompactor.class);

  private final LogFiles files;
  private final LogWriter.Tuning tuning;
  private final AtomicLong compactions = new AtomicLong();

  LogCompactor(LogFiles files, LogWriter.Tuning tuning) {
    this.files = files;
    this.tuning = tuning;
  }

  /** After a batch: too many files, or as many dead bytes on disk as live ones. */
  boolean due(LogState state) {
    if (files.count() >= tuning.maxFiles()) {
      return true;
    }
    if (files.count() < tuning.minFilesToCompact()
        && files.diskBytes() < 2 * tuning.segmentBytes()) {
      return false;
    }
    long live = state.liveBytes();
    return files.diskBytes() - live >= live;
  }

  /** At close: whatever is on disk is rewritten as at most one file (none when nothing lives). */
  boolean dueAtClose(LogState state) {
    return tuning.compactOnClose() && (files.count() > 1 || (state.isEmpty() && files.count() > 0));
  }

  /** Replaces every file by one snapshot of {@code state} (none when nothing is live). */
  void compact(LogState state) throws IOException {
    List<LogFile> old = files.list();
    LogFile snap = null;
    if (!state.isEmpty()) {
      List<LogRecord> live = new ArrayList<>(state.results());
      live.addAll(state.intents());
      snap = files.publish(true, live); // published before anything older goes
    }
    files.retire(old);
    compactions.incrementAndGet();
    log.debug("outbox compacted {} files into {}", old.size(), snap == null ? "none" : snap.path());
  }

  long count() {
    return compactions.get();
  }
}
