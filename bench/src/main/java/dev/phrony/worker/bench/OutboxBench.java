package dev.phrony.worker.bench;

import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.outbox.Durability;
import dev.phrony.worker.outbox.DurableOutbox;
import dev.phrony.worker.outbox.HeldResult;
import dev.phrony.worker.state.StateDir;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Holds per second, durable ({@code --durability all}) against memory ({@code none}), with N
 * concurrent virtual threads each holding and then releasing results, as a worker under load does:
 * the outbox alone, no gRPC and no handler.
 *
 * <pre>
 * bin/bench --outbox [threads,...] [seconds] [payloadBytes] [dir]
 * </pre>
 */
public final class OutboxBench {
  private OutboxBench() {}

  public static void main(String[] args) throws Exception {
    int[] threads =
        Arrays.stream((args.length > 0 ? args[0] : "1,16,64,256").split(","))
            .mapToInt(Integer::parseInt)
            .toArray();
    double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 3;
    int payload = args.length > 2 ? Integer.parseInt(args[2]) : 512;
    Path base = args.length > 3 ? Path.of(args[3]) : Files.createTempDirectory("outbox-bench");
    System.out.printf(
        Locale.ROOT,
        "outbox bench: %.1f s per run, %d-byte payloads, state under" + " %s%n",
        seconds,
        payload,
        base);
    System.out.printf(
        Locale.ROOT,
        "%-8s %7s %12s %10s %10s %10s %9s %9s%n",
        "mode",
        "threads",
        "holds/s",
        "p50 us",
        "p99 us",
        "max us",
        "batches",
        "flushes");
    for (int n : threads) {
      for (Durability d : new Durability[] {Durability.ALL, Durability.NONE}) {
        run(base.resolve(d.flagName() + "-" + n), d, n, seconds, payload);
      }
    }
  }

  private static void run(
      Path dir, Durability durability, int threads, double seconds, int payloadBytes)
      throws Exception {
    byte[] payload =
        ("{\"pad\":\"" + "x".repeat(Math.max(0, payloadBytes - 10)) + "\"}")
            .getBytes(StandardCharsets.UTF_8);
    InstantSource clock = InstantSource.system();
    try (StateDir sd = StateDir.open(dir);
        DurableOutbox o =
            DurableOutbox.open(sd, new DurableOutbox.Options(durability, null, clock))) {
      long deadline = System.nanoTime() + (long) (seconds * 1e9);
      AtomicLong seq = new AtomicLong();
      List<Latencies> lat = new ArrayList<>();
      try (ExecutorService vt = Executors.newVirtualThreadPerTaskExecutor()) {
        for (int t = 0; t < threads; t++) {
          Latencies mine = new Latencies();
          lat.add(mine);
          vt.submit(
              () -> {
                while (System.nanoTime() < deadline) {
                  String id = "c" + seq.incrementAndGet();
                  long t0 = System.nanoTime();
                  o.hold(
                      new HeldResult(
                          id,
                          "s",
                          "bench@1",
                          "irreversible_action",
                          clock.instant(),
                          new CallOutcome.Payload(payload)));
                  mine.add(System.nanoTime() - t0);
                  o.release(id); // the runtime's result_ack
                }
                return null;
              });
        }
      }
      long total = lat.stream().mapToLong(Latencies::size).sum();
      double[] us = Latencies.percentilesMs(lat, 50, 99, 100);
      System.out.printf(
          Locale.ROOT,
          "%-8s %7d %12.0f %10.0f %10.0f %10.0f %9d %9d%n",
          durability.flagName(),
          threads,
          total / seconds,
          us[0] * 1000,
          us[1] * 1000,
          us[2] * 1000,
          o.batchCount(),
          o.flushCount());
    }
  }
}
