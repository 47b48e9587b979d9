package dev.phrony.worker.dist;

import dev.phrony.worker.testkit.realrt.RealRuntime;
import dev.phrony.worker.testkit.realrt.RealRuntime.Answer;
import dev.phrony.worker.testkit.realrt.RealRuntime.ToolCall;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link ReloadScenario} against the real runtime's Work-stream code ({@link RealRuntime}), which a
 * clone of the project does not have: skipped when it is absent. The runtime does not show its
 * registrations' keys, so a key is out of routing when a call of it, given 300 ms to find a worker,
 * is refused.
 */
class RealRuntimeReloadIT {
  @TempDir Path tmp;

  /** {@link ReloadScenario.Target} over realrt's control API. */
  private static final class Real implements ReloadScenario.Target {
    private final RealRuntime rt;
    private final AtomicLong ids = new AtomicLong();
    private volatile Answer lastRoute;

    Real(RealRuntime rt) {
      this.rt = rt;
    }

    @Override
    public String address() {
      return rt.target();
    }

    private CompletableFuture<Answer> dispatch(String key, long timeoutMs) {
      return rt.dispatch(
          ToolCall.of("s-rreload", key, ReloadScenario.ARGS)
              .withCallId("rr-" + ids.incrementAndGet())
              .withTimeoutMs(timeoutMs));
    }

    /** realrt's {@code /dispatch} does not say which worker answered. */
    @Override
    public CompletableFuture<ReloadScenario.Reply> dispatch(String key) {
      return dispatch(key, 0).thenApply(a -> new ReloadScenario.Reply(a.ok(), a.payload(), "?", a));
    }

    @Override
    public boolean connected(String workerId) {
      try {
        return rt.connected(workerId);
      } catch (IOException e) {
        return false; // asked again
      }
    }

    @Override
    public boolean onlyOpen(String workerId) {
      try {
        return rt.openStreams() == 1 && rt.connected(workerId);
      } catch (IOException e) {
        return false; // asked again
      }
    }

    @Override
    public long registers() {
      try {
        return rt.events("type=recv&kind=register&limit=100000").size();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    /** Whether a call of {@code key} given 300 ms to find a worker is answered. */
    @Override
    public boolean routes(String key) {
      lastRoute = dispatch(key, 300).orTimeout(30, TimeUnit.SECONDS).join();
      return lastRoute.ok();
    }

    /** A lease TTL and 3 s: each look is a call that may wait 300 ms. */
    @Override
    public Duration outOfRoutingWithin() {
      return ReloadScenario.TTL.plusSeconds(3);
    }

    @Override
    public String lastRoute() {
      return " (" + lastRoute + ")";
    }

    @Override
    public String describe() {
      return "\n" + rt.output();
    }
  }

  @Test
  void jars_copied_in_and_replaced_under_load_are_served_live_by_the_real_runtime()
      throws Exception {
    Path binary = RealRuntime.binary().orElse(null);
    Assumptions.assumeTrue(binary != null, RealRuntime::absent);
    try (RealRuntime rt =
        RealRuntime.start(
            binary,
            tmp.resolve("realrt.log"),
            Duration.ofSeconds(20),
            "--lease-ttl",
            ReloadScenario.TTL.toSeconds() + "s",
            "--recorder",
            "memory")) {
      ReloadScenario.run("RealRuntimeReloadIT", tmp, "rreload-1", new Real(rt));
    }
  }
}
