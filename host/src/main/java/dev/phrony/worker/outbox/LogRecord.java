package dev.phrony.worker.outbox;

import java.time.Instant;

/** One record of the outbox log; replayed in order by {@link LogState}. */
sealed interface LogRecord {

  String callId();

  /** A held result; {@code orphanedAt} is set in snapshots of an orphaned one. */
  record Result(HeldResult result, Instant orphanedAt) implements LogRecord {
    @Override
    public String callId() {
      return result.callId();
    }
  }

  /** The runtime acknowledged the result (or it was pruned or purged). */
  record Release(String callId) implements LogRecord {}

  /** The result became orphaned at {@code at}. */
  record Orphan(String callId, Instant at) implements LogRecord {}

  /** A handler is about to run; {@code interruptedAt} is set in snapshots of an interrupted one. */
  record Intent(IntentRecord intent, Instant interruptedAt) implements LogRecord {
    @Override
    public String callId() {
      return intent.callId();
    }
  }

  /** The intent was found without a result at start, at {@code at}. */
  record Interrupted(String callId, Instant at) implements LogRecord {}

  /** The intent ended without a result (cancelled, pruned, purged). */
  record DropIntent(String callId) implements LogRecord {}
}
