package dev.phrony.worker.outbox;

import dev.phrony.worker.state.StateDir;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Child process for CrashSafetyTest: holds results (and intents, releases, orphan marks) from
 * several virtual threads until it is killed, printing each claim only after the call that makes it
 * returned: {@code HELD id}, {@code INTENT id}. Small compaction thresholds, so kills also land in
 * compactions.
 */
public final class CrashWriterMain {
  /** When each intent's call started: nothing reads it back but the record's shape. */
  private static final Instant STARTED = Instant.parse("2026-03-01T12:00:00Z");

  private CrashWriterMain() {}

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    String prefix = args[1];
    int threads = Integer.parseInt(args[2]);
    StateDir sd = StateDir.open(dir);
    DurableOutbox o =
        DurableOutbox.open(
            sd,
            new DurableOutbox.Options(Durability.WRITES, null, InstantSource.system()),
            new LogWriter.Tuning(6, 64, TimeUnit.MILLISECONDS.toNanos(2), true, 64 << 10));
    PrintStream out = System.out;
    Object printLock = new Object();
    AtomicInteger seq = new AtomicInteger();
    synchronized (printLock) {
      out.println("READY");
      out.flush();
    }
    CountDownLatch never = new CountDownLatch(1);
    for (int t = 0; t < threads; t++) {
      Thread.ofVirtual()
          .start(
              () -> {
                while (true) {
                  int i = seq.incrementAndGet();
                  String id = prefix + "-" + i;
                  String payload =
                      "{\"call\":\"" + id + "\",\"pad\":\"" + "x".repeat(i % 7 * 300) + "\"}";
                  if (i % 11 == 0) {
                    o.recordIntent(Results.intent(id, STARTED)); // never gets a result
                    say(out, printLock, "INTENT " + id);
                    continue;
                  }
                  if (i % 3 == 0) {
                    o.recordIntent(Results.intent(id, STARTED));
                  }
                  o.hold(
                      Results.result(
                          id, i % 2 == 0 ? "idempotent_write" : "non_idempotent_write", payload));
                  say(out, printLock, "HELD " + id);
                  if (i % 5 == 0) {
                    // Said before the call: the release may land on disk before a kill that comes
                    // between the call and a line printed after it.
                    say(out, printLock, "RELEASING " + id);
                    o.release(id);
                  } else if (i % 7 == 0) {
                    o.markOrphaned(id);
                  }
                }
              });
    }
    never.await();
  }

  private static void say(PrintStream out, Object lock, String line) {
    synchronized (lock) {
      out.println(line);
      out.flush();
    }
  }
}
