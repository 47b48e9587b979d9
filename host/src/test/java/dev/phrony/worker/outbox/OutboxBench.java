package dev.phrony.worker.outbox;

import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.state.StateDir;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Arrays;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Holds per second, durable ({@code --durability all}) against memory ({@code none}), with N
 * concurrent virtual threads each holding and then releasing results, as a worker under load
 * does. Not a test; run by hand:
 *
 * <pre>
 * java -cp host/target/classes:host/target/test-classes:DEPS \
 *     dev.phrony.worker.outbox.OutboxBench [threads,...] [seconds] [payloadBytes] [dir]
 * </pre>
 */
public final class OutboxBench {
  private OutboxBench() {}

  public static void main(String[] args) throws Exception {
    int[] threads = Arrays.stream((args.length > 0 ? args[0] : "1,16,64,256").split(","))
        .mapToInt(Integer::parseInt).toArray();
    double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 3;
    int payload = args.length > 2 ? Integer.parseInt(args[2]) : 512;
    Path base = args.length > 3 ? Path.of(args[3]) : Files.createTempDirectory("outbox-bench");
    System.out.printf("outbox bench: %.1f s per run, %d-byte payloads, state under %s%n", seconds,
        payload, base);
    System.out.printf("%-8s %7s %12s %10s %10s %10s %9s %9s%n", "mode", "threads", "holds/s",
        "p50 us", "p99 us", "max us", "batches", "flushes");
    for (int n : threads) {
      for (Durability d : new Durability[] {Durability.ALL, Durability.NONE}) {
        run(base.resolve(d.flagName() + "-" + n), d, n, seconds, payload);
      }
    }
  }

  private static void run(Path dir, Durability durability, int threads, double seconds,
      int payloadBytes) throws Exception {
    byte[] payload = ("{\"pad\":\"" + "x".repeat(Math.max(0, payloadBytes - 10)) + "\"}")
        .getBytes(StandardCharsets.UTF_8);
    try (StateDir sd = StateDir.open(dir);
        DurableOutbox o = DurableOutbox.open(sd, new DurableOutbox.Options(durability, null,
            InstantSource.system()))) {
      long deadline = System.nanoTime() + (long) (seconds * 1e9);
      AtomicLong seq = new AtomicLong();
      long[][] lat = new long[threads][];
      int[] counts = new int[threads];
      try (ExecutorService vt = Executors.newVirtualThreadPerTaskExecutor()) {
        for (int t = 0; t < threads; t++) {
          int me = t;
          vt.submit(() -> {
            long[] l = new long[1 << 16];
            int c = 0;
            while (System.nanoTime() < deadline) {
              String id = "c" + seq.incrementAndGet();
              long t0 = System.nanoTime();
              o.hold(new HeldResult(id, "s", "bench@1", "irreversible_action", Instant.now(),
                  new CallOutcome.Payload(payload)));
              long took = System.nanoTime() - t0;
              if (c == l.length) {
                l = Arrays.copyOf(l, l.length * 2);
              }
              l[c++] = took;
              o.release(id); // the runtime's result_ack
            }
            lat[me] = l;
            counts[me] = c;
            return null;
          });
        }
      }
      long total = Arrays.stream(counts).sum();
      long[] all = new long[(int) total];
      int at = 0;
      for (int t = 0; t < threads; t++) {
        System.arraycopy(lat[t], 0, all, at, counts[t]);
        at += counts[t];
      }
      Arrays.sort(all);
      System.out.printf("%-8s %7d %12.0f %10d %10d %10d %9d %9d%n", durability.flagName(),
          threads, total / seconds, pct(all, 0.50) / 1000, pct(all, 0.99) / 1000,
          all.length == 0 ? 0 : all[all.length - 1] / 1000, o.batchCount(), o.flushCount());
    }
  }

  private static long pct(long[] sorted, double p) {
    return sorted.length == 0 ? 0 : sorted[(int) Math.min(sorted.length - 1, p * sorted.length)];
  }

}
