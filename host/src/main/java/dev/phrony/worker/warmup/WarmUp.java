package dev.phrony.worker.warmup;

import dev.phrony.worker.ops.LogSetup;
import dev.phrony.worker.ops.MicrometerMetrics;
import dev.phrony.worker.outbox.DurableOutbox;
import dev.phrony.worker.state.StateDir;
import dev.phrony.worker.state.StateDirMove;
import dev.phrony.worker.work.WorkClient;
import dev.phrony.worker.work.WorkOptions;
import dev.phrony.worker.work.WorkerIdentity;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Warms a {@code run}'s call path before it registers: a fresh JVM serves its first calls at a
 * fraction of its speed while the JIT compiles them on the same cores, so a worker thrown into load
 * from {@code registered} (an autoscaler's new pod, a restart) would start slow. It serves {@link
 * WarmUpTools}' built-in handlers through the worker's own classes, a {@link WorkClient} with its
 * channel, dispatcher and outbox, over real gRPC on loopback to a {@link WarmUpRuntime} in this
 * JVM, on a stream that ends and opens again every few thousand calls (so that registering and a
 * stream's first and last frames are in the JIT's profiles too); once the budget is spent it goes
 * on with one call at a time until the JIT has caught up ({@link JitSettle}); then closes all of
 * it. Nothing is left: not its port, threads, metrics (a registry of its own) nor outbox records (a
 * state dir of its own, under the worker's, deleted after).
 *
 * <p>A failure never stops the worker: it is logged on one line, and the worker registers.
 */
public final class WarmUp {
  private static final Logger log = LoggerFactory.getLogger(WarmUp.class);

  /** The folder of the worker's state dir that holds the warm-up's own, while it runs. */
  static final String STATE_SUBDIR = "warm-up";

  /** Where a warm-up's runtime listens: a free loopback port. */
  public static final InetSocketAddress LOOPBACK =
      new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);

  /** How long after its budget a warm-up may still wait for its last answers. */
  private static final Duration LATE = Duration.ofSeconds(10);

  /** At most how long a warm-up waits, after its budget, for the JIT to catch up. */
  static final Duration SETTLE_MAX = Duration.ofSeconds(3);

  /**
   * What a warm-up did: its calls, on how many streams (each one registered), how long it took and
   * how much of that was spent waiting for the JIT at the end, or why it did not finish.
   */
  public record Result(long calls, int streams, Duration took, Duration settled, String failure) {
    public boolean ok() {
      return failure == null;
    }
  }

  private final WarmUpBudget budget;
  private final WorkOptions worker;
  private final DurableOutbox.Options outbox;
  private final Path stateDir;
  private final InetSocketAddress runtimeAt;
  private final CompletableFuture<Void> stopped = new CompletableFuture<>();

  /**
   * @param worker the worker's options: the warm-up's client has its limits, not its address,
   *     identity or transport
   * @param outbox the worker's outbox options (its durability)
   * @param stateDir the worker's state dir, which holds the warm-up's own while it runs
   * @param runtimeAt where its runtime listens: {@link #LOOPBACK} (a test's may be taken)
   */
  public WarmUp(
      WarmUpBudget budget,
      WorkOptions worker,
      DurableOutbox.Options outbox,
      Path stateDir,
      InetSocketAddress runtimeAt) {
    this.budget = budget;
    this.worker = worker;
    this.outbox = outbox;
    this.stateDir = stateDir;
    this.runtimeAt = runtimeAt;
  }

  /** Ends a warm-up that runs now (the worker is stopping); it then returns at once. */
  public void stop() {
    stopped.complete(null);
  }

  /** Serves the budget's calls, then closes everything; logs one line and never throws. */
  public Result run() {
    long t0 = System.nanoTime();
    Result r;
    try {
      Served served = serve();
      r =
          new Result(
              served.calls(),
              served.streams(),
              Duration.ofNanos(System.nanoTime() - t0),
              served.settled(),
              null);
      log.info(
          "warm-up: {} calls on {} streams in {} s ({} s of it for the JIT to catch up) before"
              + " registering (--warm-up {})",
          r.calls(),
          r.streams(),
          seconds(r.took()),
          seconds(r.settled()),
          budget);
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      r =
          new Result(
              0,
              0,
              Duration.ofNanos(System.nanoTime() - t0),
              Duration.ZERO,
              String.valueOf(e.getMessage()));
      log.warn(
          "warm-up failed, registering without it: {} ({})",
          e.getMessage(),
          e.getClass().getSimpleName());
    }
    return r;
  }

  private static String seconds(Duration d) {
    return String.format(Locale.ROOT, "%.1f", d.toMillis() / 1e3);
  }

  private record Served(long calls, int streams, Duration settled) {}

  private Served serve() throws Exception {
    Path dir = stateDir.resolve(STATE_SUBDIR);
    StateDirMove.deleteTree(dir); // one a killed worker left behind
    // Its connect, register and state dir lines would read as the worker's own; nothing else runs
    // in the worker yet (the plugins folder is watched once it is registered).
    try (AutoCloseable quiet = LogSetup.warnOnly("dev.phrony.worker");
        WarmUpRuntime runtime = WarmUpRuntime.start(budget, runtimeAt);
        StateDir state = StateDir.open(dir);
        DurableOutbox box = DurableOutbox.open(state, outbox);
        MicrometerMetrics metrics =
            new MicrometerMetrics(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
        WorkClient client =
            new WorkClient(options(runtime.target()), WarmUpTools.catalog(), box, metrics)) {
      client.start();
      await(runtime.budgetSpent(), runtime, budget.time().plus(LATE));
      // A trickle of calls goes on meanwhile (WarmUpRuntime.SETTLE_SLOTS).
      JitSettle jit = JitSettle.ofThisJvm();
      Duration settled = jit == null ? Duration.ZERO : jit.await(SETTLE_MAX, stopped);
      runtime.finish();
      long calls = await(runtime.done(), runtime, LATE);
      if (runtime.failed() > 0) {
        throw new IllegalStateException(runtime.failed() + " warm-up calls failed");
      }
      return new Served(calls, runtime.streams(), settled);
    } finally {
      StateDirMove.deleteTree(dir);
    }
  }

  /**
   * The answer of {@code f}, unless {@code runtime}'s stream fails, the worker stops or it takes
   * longer than {@code bound}.
   */
  private <T> T await(CompletableFuture<T> f, WarmUpRuntime runtime, Duration bound)
      throws Exception {
    try {
      CompletableFuture.anyOf(f, runtime.done(), stopped)
          .get(bound.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new IllegalStateException("not done in " + bound.toSeconds() + " s");
    } catch (ExecutionException e) {
      // the runtime's stream failed: done has its cause
    }
    if (runtime.done().isCompletedExceptionally()) {
      try {
        runtime.done().get();
      } catch (ExecutionException e) {
        throw e.getCause() instanceof Exception x ? x : e;
      }
    }
    if (!f.isDone()) {
      throw new IllegalStateException("the worker is stopping");
    }
    return f.get();
  }

  private WorkOptions options(String target) {
    return WorkOptions.defaults(target, new WorkerIdentity("phrony-warm-up", "", ""))
        .withMaxResultBytes(worker.maxResultBytes())
        .withMaxInboundBytes(worker.maxInboundBytes())
        .withExposeInternalErrors(worker.exposeInternalErrors())
        .withDrainTimeout(Duration.ofSeconds(1));
  }
}
