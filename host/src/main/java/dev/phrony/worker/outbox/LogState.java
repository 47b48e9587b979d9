package dev.phrony.worker.outbox;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;

/** What the outbox log says, replayed record by record. Not thread-safe. */
final class LogState {
  private final Map<String, LogRecord.Result> results = new LinkedHashMap<>();
  private final Map<String, LogRecord.Intent> intents = new LinkedHashMap<>();
  private long liveBytes;

  void apply(LogRecord record) {
    switch (record) {
      case LogRecord.Result r -> {
        put(r);
        removeIntent(r.callId()); // a result supersedes its intent
      }
      case LogRecord.Release r -> {
        LogRecord.Result old = results.remove(r.callId());
        if (old != null) {
          liveBytes -= LogFileFormat.estimate(old);
        }
      }
      case LogRecord.Orphan o -> {
        LogRecord.Result old = results.get(o.callId());
        if (old != null && old.orphanedAt() == null) {
          results.put(o.callId(), new LogRecord.Result(old.result(), o.at()));
        }
      }
      case LogRecord.Intent i -> {
        removeIntent(i.callId());
        intents.put(i.callId(), i);
        liveBytes += LogFileFormat.estimate(i);
      }
      case LogRecord.Interrupted i -> {
        LogRecord.Intent old = intents.get(i.callId());
        if (old != null && old.interruptedAt() == null) {
          intents.put(i.callId(), new LogRecord.Intent(old.intent(), i.at()));
        }
      }
      case LogRecord.DropIntent d -> removeIntent(d.callId());
    }
  }

  private void put(LogRecord.Result r) {
    LogRecord.Result old = results.put(r.callId(), r);
    if (old != null) {
      liveBytes -= LogFileFormat.estimate(old);
    }
    liveBytes += LogFileFormat.estimate(r);
  }

  private void removeIntent(String callId) {
    LogRecord.Intent old = intents.remove(callId);
    if (old != null) {
      liveBytes -= LogFileFormat.estimate(old);
    }
  }

  Collection<LogRecord.Result> results() {
    return results.values();
  }

  Collection<LogRecord.Intent> intents() {
    return intents.values();
  }

  /** Whether a result or an intent of {@code callId} is live. */
  boolean knows(String callId) {
    return results.containsKey(callId) || intents.containsKey(callId);
  }

  boolean isEmpty() {
    return results.isEmpty() && intents.isEmpty();
  }

  /** About how many bytes a snapshot of this state takes. */
  long liveBytes() {
    return liveBytes;
  }
}
