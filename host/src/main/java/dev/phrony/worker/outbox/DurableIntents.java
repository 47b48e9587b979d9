package dev.phrony.worker.outbox;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The intents of a {@link DurableOutbox}: each written to its log before the call's handler may
 * start, superseded by the call's held result, and, for a call whose handler was stopped (a cancel,
 * or the process died) before it had one, kept as interrupted, so a re-invoke is refused, until an
 * operator or the retention drops it. Thread-safe.
 */
final class DurableIntents implements CallIntents {
  /** The outbox's own: what an operator's log configuration names. */
  private static final Logger log = LoggerFactory.getLogger(DurableOutbox.class);

  private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

  /** An intent, and since when its call is interrupted (null while its handler may run). */
  private record IntentState(IntentRecord intent, Instant interruptedAt) {}

  private final ConcurrentHashMap<String, IntentState> intents = new ConcurrentHashMap<>();
  private final Durability durability;
  private final LogWriter journal;
  private final InstantSource clock;
  private final AtomicLong failures;

  /** {@code failures} counts each intent whose write failed (with the outbox's failed holds). */
  DurableIntents(
      Durability durability, LogWriter journal, InstantSource clock, AtomicLong failures) {
    this.durability = durability;
    this.journal = journal;
    this.clock = clock;
    this.failures = failures;
  }

  /**
   * Takes in the intents the log holds at open. One without an interruption was running when the
   * worker stopped: it is interrupted now (logged, and recorded in the log). Returns how many are
   * interrupted: all of them.
   */
  int load(Collection<LogRecord.Intent> found) {
    List<LogRecord> newlyInterrupted = new ArrayList<>();
    for (LogRecord.Intent i : found) {
      IntentRecord in = i.intent();
      Instant at = i.interruptedAt();
      if (at == null) {
        // When the stop came is not known; from its start on, its outcome was. Not the time of
        // this open: a record shows when its event happened, written once, so a purge by age
        // (which opens the outbox too) sees the call's age, not zero.
        at = in.startedAt();
        newlyInterrupted.add(new LogRecord.Interrupted(in.callId(), at));
        log.warn(
            "call {} was interrupted: its {} handler {} (session {}) started at {} and the "
                + "worker stopped before its result was held; it may or may not have acted, and a "
                + "re-invoke will be refused",
            in.callId(),
            in.sideEffectClass(),
            in.toolKey(),
            in.sessionId(),
            in.startedAt());
      }
      intents.put(in.callId(), new IntentState(in, at));
    }
    if (!newlyInterrupted.isEmpty()) {
      journal.append(newlyInterrupted);
    }
    return intents.size();
  }

  @Override
  public boolean needsIntent(String sideEffectClass) {
    return durability.needsIntent(sideEffectClass);
  }

  @Override
  public CompletableFuture<Void> recordIntentAsync(IntentRecord intent) {
    if (!needsIntent(intent.sideEffectClass())) {
      return DONE;
    }
    // Known before it is on disk, so a cancel that lands during the write still marks it.
    IntentState state = new IntentState(intent, null);
    intents.put(intent.callId(), state);
    CompletableFuture<Void> written;
    try {
      written = journal.appendAsync(List.of(new LogRecord.Intent(intent, null)));
    } catch (RuntimeException e) {
      intents.remove(intent.callId(), state);
      throw e;
    }
    return written.whenComplete(
        (v, e) -> {
          if (e != null) {
            intents.remove(intent.callId(), state); // not on disk: the handler will not run
            failures.incrementAndGet();
          }
        });
  }

  /** Forgets an intent (an operator or retention cleared it, or its handler never started). */
  @Override
  public void dropIntent(String callId) {
    if (intents.remove(callId) != null) {
      journal.appendLater(new LogRecord.DropIntent(callId));
    }
  }

  @Override
  public void markInterrupted(String callId) {
    Instant now = clock.instant();
    IntentState s =
        intents.computeIfPresent(
            callId,
            (id, old) -> old.interruptedAt() != null ? old : new IntentState(old.intent(), now));
    if (s != null && s.interruptedAt() == now) {
      journal.appendLater(new LogRecord.Interrupted(callId, now));
    }
  }

  @Override
  public boolean wasInterrupted(String callId) {
    IntentState s = intents.get(callId);
    return s != null && s.interruptedAt() != null;
  }

  @Override
  public Collection<String> interruptedIds() {
    return intents.values().stream()
        .filter(s -> s.interruptedAt() != null)
        .map(s -> s.intent().callId())
        .toList();
  }

  /**
   * The call's result is held: its intent, if any, is superseded (forgotten here; the caller says
   * whether the log needs to be told). True if it had one.
   */
  boolean superseded(String callId) {
    return intents.remove(callId) != null;
  }

  boolean has(String callId) {
    return intents.containsKey(callId);
  }

  /** Drops calls interrupted at {@code cutoff} or before, adding their ids to {@code pruned}. */
  void prune(Instant cutoff, Duration retention, List<String> pruned) {
    for (IntentState s : intents.values()) {
      IntentRecord i = s.intent();
      if (s.interruptedAt() != null
          && !s.interruptedAt().isAfter(cutoff)
          && intents.remove(i.callId(), s)) {
        journal.appendLater(new LogRecord.DropIntent(i.callId()));
        pruned.add(i.callId());
        log.info(
            "pruned interrupted call {} ({}, session {}), interrupted since {} " + "(retention {})",
            i.callId(),
            i.toolKey(),
            i.sessionId(),
            s.interruptedAt(),
            retention);
      }
    }
  }

  /** Adds an entry for every running and interrupted call to {@code out}. */
  void addEntries(List<OutboxEntry> out) {
    for (IntentState s : intents.values()) {
      IntentRecord i = s.intent();
      out.add(
          new OutboxEntry(
              i.callId(),
              s.interruptedAt() == null ? OutboxEntry.State.RUNNING : OutboxEntry.State.INTERRUPTED,
              i.toolKey(),
              i.sessionId(),
              i.sideEffectClass(),
              i.startedAt(),
              null,
              s.interruptedAt() == null ? i.startedAt() : s.interruptedAt(),
              true,
              null));
    }
  }
}
