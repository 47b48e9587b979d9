package dev.phrony.worker.testkit.training;

import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.testkit.WorkerView;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * Trains the AOT cache a distribution ships ({@code aot/run-trained.aot}, JDK 25+): starts the
 * distribution's own {@code bin/phrony-worker run} with {@code PHRONY_WORKER_CDS=train} against a
 * {@link LocalRuntime} in this JVM over loopback, serves it calls the way a runtime does for a few
 * seconds, then stops it (SIGTERM: it drains, and the JVM writes the cache as it exits).
 *
 * <p>The calls cover the host's call path, not only a no-op: echo (an async handler) read-only and
 * durable ({@code idempotent_write}, and {@code non_idempotent_write} with its intent), weather and
 * payments (typed handlers: schema check, JSON in and out, payments durable), a timer-answered
 * echo, at concurrency 1 and then 64; every result is acked. The worker is a separate process, so
 * the profiles are a worker's alone, not mixed with this runtime's use of the same gRPC code.
 *
 * <p>{@code java -cp 'DIST/lib/*' dev.phrony.worker.testkit.training.CacheTraining DIST [SECONDS]}
 * (the dist module runs it at {@code package}). Exits 0 without a cache on a JDK before 25.
 */
public final class CacheTraining {
  private static final String WORKER_ID = "aot-training";
  private static final int CONCURRENCY = 64;

  private CacheTraining() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 1 || args.length > 2) {
      System.err.println("usage: CacheTraining DIST_DIR [SECONDS]");
      System.exit(2);
    }
    if (Runtime.version().feature() < 25) {
      System.err.println(
          "aot training: skipped, Java " + Runtime.version().feature() + " has no trained cache");
      return;
    }
    Path dist = Path.of(args[0]).toAbsolutePath();
    double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 6;
    System.exit(train(dist, Duration.ofMillis((long) (seconds * 1000))));
  }

  private static int train(Path dist, Duration load) throws Exception {
    Path aot = Files.createDirectories(dist.resolve("aot"));
    Path state = Files.createTempDirectory("phrony-aot-training");
    Path log = aot.resolve("training.log");
    try (LocalRuntime rt =
        LocalRuntime.builder().port(0).queueWait(Duration.ofSeconds(60)).start()) {
      ProcessBuilder pb =
          new ProcessBuilder(
                  dist.resolve("bin/phrony-worker").toString(),
                  "run",
                  "--runtime",
                  rt.target(),
                  "--worker-id",
                  WORKER_ID,
                  "--state-dir",
                  state.toString(),
                  "--http",
                  "none",
                  "--drain-timeout",
                  "1s",
                  "--handler",
                  "echo@default:max-concurrency=" + CONCURRENCY)
              .redirectErrorStream(true)
              .redirectOutput(log.toFile());
      pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
      pb.environment().put("PHRONY_WORKER_CDS", "train");
      pb.environment().put("PHRONY_WORKER_CDS_DIR", aot.toString());
      pb.environment().remove("PHRONY_WORKER_JAVA_OPTS");
      pb.environment().remove("PHRONY_RUNTIME_ADDR");
      pb.environment().remove("PHRONY_WORKER_PLUGINS");
      long t0 = System.nanoTime();
      Process worker = pb.start();
      try {
        Await.until(
            "the training worker registered",
            () -> {
              if (!worker.isAlive()) {
                throw new IllegalStateException("the training worker exited; see " + log);
              }
              return rt.worker(WORKER_ID).filter(WorkerView::connected).isPresent();
            },
            // run's warm-up (at most 60 s) comes first: the cache holds its profiles too
            Duration.ofSeconds(150));
        long[] served = new long[2];
        serve(rt, 1, load.dividedBy(6), served);
        serve(rt, CONCURRENCY, load.minus(load.dividedBy(6)), served);
        worker.destroy(); // SIGTERM: drains, then the JVM writes the cache
        if (!worker.waitFor(180, TimeUnit.SECONDS)) {
          throw new IllegalStateException("the training worker did not stop in 180 s");
        }
        Path cache = aot.resolve("run-trained.aot");
        if (worker.exitValue() != 0 || !Files.isRegularFile(cache)) {
          System.err.println(tail(log));
          System.err.println("aot training: no cache (worker status " + worker.exitValue() + ")");
          return 1;
        }
        System.err.printf(
            Locale.ROOT,
            "aot training: %s (%d MB) from %d calls (%d failed) in %.1f s%n",
            cache,
            Files.size(cache) >> 20,
            served[0],
            served[1],
            (System.nanoTime() - t0) / 1e9);
        Files.deleteIfExists(log);
        return served[1] == 0 ? 0 : 1;
      } finally {
        worker.destroyForcibly();
        deleteTree(state);
      }
    }
  }

  /** {@code concurrency} calls in flight for {@code duration}; adds to {calls, failures}. */
  private static void serve(LocalRuntime rt, int concurrency, Duration duration, long[] served)
      throws InterruptedException {
    Semaphore slots = new Semaphore(concurrency);
    AtomicLong failed = new AtomicLong();
    long end = System.nanoTime() + duration.toNanos();
    long n = 0;
    while (System.nanoTime() < end) {
      slots.acquire();
      rt.dispatch(call(n++))
          .whenComplete(
              (o, e) -> {
                if (e != null || !(o instanceof Outcome.Result)) {
                  failed.incrementAndGet();
                }
                slots.release();
              });
    }
    if (!slots.tryAcquire(concurrency, 60, TimeUnit.SECONDS)) {
      throw new IllegalStateException("training calls unanswered after 60 s");
    }
    served[0] += n;
    served[1] += failed.get();
  }

  /** The n-th call of the mix: mostly a no-op, as under load, and every other kind among it. */
  private static Call call(long n) {
    return switch ((int) (n % 32)) {
      case 1, 17 -> Call.of("weather.get-forecast", "1.0.0", "{\"city\":\"Oslo\"}");
      case 5 ->
          Call.of(
              "payments.process-payment",
              "1.0.0",
              "{\"amount\":12.5,\"currency\":\"EUR\",\"payee\":\"ACME\"}");
      case 9 -> echo("{\"n\":" + n + "}").withSideEffectClass("non_idempotent_write");
      case 13 -> echo("{\"n\":" + n + "}").withSideEffectClass("idempotent_write");
      case 31 -> echo(n % 1024 == 31 ? "{\"sleep_ms\":1}" : "{\"q\":\"ping\"}");
      default -> echo("{\"city\":\"Oslo\",\"days\":3,\"x\":1}");
    };
  }

  private static Call echo(String args) {
    return Call.of("echo", "default", args).withSideEffectClass("read_only");
  }

  private static String tail(Path log) throws IOException {
    List<String> lines = Files.readAllLines(log);
    return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
  }

  private static void deleteTree(Path dir) throws IOException {
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.sorted((a, b) -> b.compareTo(a)).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
