package dev.phrony.worker.bench;

import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.WorkerView;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.LongFunction;

/**
 * {@code bin/bench --probe WORKER [--concurrency N] [--warmup S] [--measure S] [--durability D]}:
 * one worker ({@code host}, or a stand-in: {@code inline}, {@code threads}) driven at one
 * concurrency by a {@link LocalRuntime} in this JVM, with where each call's CPU goes: per thread
 * group of the worker and of this JVM (the runtime and the driver), in microseconds and in context
 * switches per call. With {@code --durability none|writes|all} the host serves rows 5a-5c's call
 * ({@code payments.process-payment}) instead of echo. For looking into a figure of the table, not
 * for the table.
 */
final class Probe {
  private Probe() {}

  static void run(Path dist, Path work, String[] args) throws Exception {
    String worker = "host";
    int concurrency = 64;
    Duration warmup = Duration.ofSeconds(5);
    Duration measure = Duration.ofSeconds(10);
    String argsJson = null;
    String durability = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--probe" -> worker = args[++i];
        case "--concurrency" -> concurrency = Integer.parseInt(args[++i]);
        case "--warmup" -> warmup = Duration.ofMillis((long) (Double.parseDouble(args[++i]) * 1e3));
        case "--measure" ->
            measure = Duration.ofMillis((long) (Double.parseDouble(args[++i]) * 1e3));
        case "--args" -> argsJson = args[++i];
        case "--durability" -> durability = args[++i];
        default -> throw new IllegalArgumentException("probe: unknown argument " + args[i]);
      }
    }
    Files.createDirectories(work);
    if (durability != null && !worker.equals("host")) {
      throw new IllegalArgumentException("probe: --durability is for --probe host");
    }
    byte[] callArgs =
        argsJson != null
            ? argsJson.getBytes(StandardCharsets.UTF_8)
            : durability != null ? Calls.PAY_ARGS : Calls.ARGS;
    try (LocalRuntime rt =
        LocalRuntime.builder()
            .port(0)
            .queueWait(Duration.ofSeconds(60))
            .eventLogCapacity(4096)
            .start()) {
      AutoCloseable process;
      long pid;
      LongFunction<Call> calls;
      if (worker.equals("host")) {
        List<String> run =
            new ArrayList<>(
                List.of(
                    "run",
                    "--runtime",
                    rt.target(),
                    "--worker-id",
                    "probe",
                    "--http",
                    "none",
                    "--state-dir-in-build-output",
                    "--state-dir",
                    work.resolve("probe-state").toString()));
        if (durability == null) {
          run.addAll(Calls.echoSlots(Math.max(64, concurrency)));
          calls = Calls.call("echo", "default", callArgs, "read_only", "probe");
        } else {
          run.addAll(
              List.of(
                  "--durability",
                  durability,
                  "--handler",
                  "payments.process-payment@1.0.0:max-concurrency=" + Math.max(16, concurrency)));
          calls =
              Calls.call(
                  "payments.process-payment", "1.0.0", callArgs, "non_idempotent_write", "probe");
        }
        HostProcess h =
            HostProcess.start(dist, work, "probe-host", Hosts.withExtraOpts(List.of()), run);
        process = registered(h, rt, "probe", h::alive, work);
        pid = h.pid();
      } else {
        PeerProcess p = PeerProcess.start(worker, rt.target(), work.resolve("probe-peer.log"));
        process = registered(p, rt, p.workerId, p::alive, work);
        pid = p.pid();
        String version = p.version;
        calls = Calls.call("echo", version, callArgs, "read_only", "probe");
      }
      try (process) {
        Driver driver = new Driver(rt, calls, pid, null);
        long self = ProcessHandle.current().pid();
        // Both processes are sampled when the measured window opens, and again when it closes.
        long from = System.nanoTime() + warmup.toNanos();
        List<Map<String, ThreadStats.Group>> before = new ArrayList<>();
        Thread sampler =
            Thread.ofPlatform()
                .daemon()
                .start(
                    () -> {
                      LockSupport.parkNanos(Math.max(0, from - System.nanoTime()));
                      before.add(ThreadStats.sample(pid));
                      before.add(ThreadStats.sample(self));
                    });
        Driver.Slice slice = driver.slice(concurrency, warmup, measure);
        Map<String, ThreadStats.Group> workerAfter = ThreadStats.sample(pid);
        Map<String, ThreadStats.Group> selfAfter = ThreadStats.sample(self);
        sampler.join();
        Driver.Result r = Driver.Result.of(List.of(slice));
        System.out.printf(
            Locale.ROOT,
            "%s at concurrency %d: %.0f calls/s, p50 %.3f ms," + " p99 %.3f ms (%d calls)%n",
            worker,
            concurrency,
            r.perSecond(),
            r.p50Ms(),
            r.p99Ms(),
            r.ok());
        // The window closes when the last lane ends, a little after the measured time: close
        // enough for shares per call.
        print("worker (" + worker + ")", ThreadStats.delta(before.get(0), workerAfter), r.ok());
        print("runtime and driver (this JVM)", ThreadStats.delta(before.get(1), selfAfter), r.ok());
      }
    }
  }

  private static void print(String what, Map<String, ThreadStats.Group> groups, long calls) {
    ThreadStats.Group total = ThreadStats.total(groups);
    System.out.printf(
        Locale.ROOT,
        "  %s: %.2f us CPU/call, %.2f voluntary + %.2f involuntary" + " switches/call%n",
        what,
        total.cpuNanos() / 1e3 / calls,
        (double) total.voluntary() / calls,
        (double) total.involuntary() / calls);
    groups.entrySet().stream()
        .filter(e -> e.getValue().cpuNanos() > 0 || e.getValue().voluntary() > calls / 100)
        .sorted((a, b) -> Long.compare(b.getValue().cpuNanos(), a.getValue().cpuNanos()))
        .forEach(
            e ->
                System.out.printf(
                    Locale.ROOT,
                    "    %-32s %6.2f us  %5.2f + %5.2f%n",
                    e.getKey(),
                    e.getValue().cpuNanos() / 1e3 / calls,
                    (double) e.getValue().voluntary() / calls,
                    (double) e.getValue().involuntary() / calls));
  }

  /** {@code process} once {@code rt} has worker {@code id}; its log is in {@code work}. */
  private static AutoCloseable registered(
      AutoCloseable process, LocalRuntime rt, String id, BooleanSupplier alive, Path work)
      throws Exception {
    return Hosts.awaitRegistered(
        process,
        id,
        alive,
        () -> "see its log in " + work,
        () -> rt.worker(id).filter(WorkerView::connected).isPresent());
  }
}
