package dev.phrony.worker.bench;

import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.WorkerView;
import dev.phrony.worker.testkit.realrt.RealRuntime;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Starts the worker processes the rows measure (hosts from the assembled distribution, the stand-in
 * peers, a {@code --peer-bin} binary) and hands each back once its runtime has it registered. One
 * that exits first, or does not register within {@link #START_TIMEOUT}, is closed and fails its row
 * with its output. Owns the numbering of the hosts' worker ids.
 */
final class Hosts {
  static final Duration START_TIMEOUT = Duration.ofSeconds(60);

  private final Path dist;
  private final Path work;
  private int started;

  Hosts(Path dist, Path work) {
    this.dist = dist;
    this.work = work;
  }

  /** The worker id of the host started last ({@code bench-N}). */
  String lastWorkerId() {
    return "bench-" + started;
  }

  /** A host on {@code runtime}, as worker {@code bench-N}, once it is connected. */
  HostProcess start(
      LocalRuntime runtime, String name, List<String> javaOpts, List<String> extraArgs)
      throws Exception {
    return start(
        runtime.target(),
        name,
        javaOpts,
        extraArgs,
        id -> runtime.worker(id).filter(WorkerView::connected).isPresent());
  }

  /**
   * A host on the runtime at {@code target} as worker {@code bench-N}, once {@code registered}
   * holds for its worker id, with its GC logged. {@code --drain-timeout} is 10 s and {@code --http}
   * none unless {@code extraArgs} sets them.
   */
  HostProcess start(
      String target,
      String name,
      List<String> javaOpts,
      List<String> extraArgs,
      Predicate<String> registered)
      throws Exception {
    String id = "bench-" + (++started);
    List<String> args =
        new ArrayList<>(
            List.of(
                "run",
                "--runtime",
                target,
                "--worker-id",
                id,
                "--state-dir-in-build-output",
                "--state-dir",
                work.resolve("state-" + name).toString()));
    if (!extraArgs.contains("--drain-timeout")) {
      args.addAll(List.of("--drain-timeout", "10s"));
    }
    if (!extraArgs.contains("--http")) {
      args.addAll(List.of("--http", "none"));
    }
    args.addAll(extraArgs);
    HostProcess host = HostProcess.start(dist, work, name, withExtraOpts(javaOpts), args, true);
    return awaitRegistered(
        host, name, host::alive, () -> "stderr:\n" + host.stderr(), () -> registered.test(id));
  }

  /**
   * {@code bin/phrony-worker ARGS...} as it comes (with PHRONY_BENCH_HOST_OPTS), for the rows that
   * time a start or a command themselves.
   */
  HostProcess command(String name, List<String> args) throws Exception {
    return HostProcess.start(dist, work, name, withExtraOpts(List.of()), args);
  }

  /** A stand-in peer of {@code shape} on {@code runtime}, once it is connected. */
  PeerProcess startPeer(LocalRuntime runtime, String shape) throws Exception {
    PeerProcess peer =
        PeerProcess.start(shape, runtime.target(), work.resolve("peer-" + shape + ".log"));
    return awaitRegistered(
        peer,
        "peer " + shape,
        peer::alive,
        () -> "see its log in " + work,
        () -> runtime.worker(peer.workerId).filter(WorkerView::connected).isPresent());
  }

  /**
   * The {@code --peer-bin} worker {@code bin} (testworker's flags) serving echo@default with 64
   * slots, dialling {@code addr} ({@code rt} or a relay in front of it), once {@code rt} has it.
   */
  BinaryProcess startPeerBin(Path bin, RealRuntime rt, String addr, String id, boolean noop)
      throws Exception {
    List<String> cmd =
        new ArrayList<>(
            List.of(
                bin.toString(),
                "--addr",
                addr,
                "--worker-id",
                id,
                "--tool",
                "echo",
                "--version",
                "default",
                "--max-concurrency",
                "64"));
    if (noop) {
      cmd.add("--noop");
    }
    BinaryProcess peer = BinaryProcess.start(id, cmd, work.resolve(id + ".log"));
    return awaitRegistered(
        peer,
        "peer " + id,
        peer::alive,
        () -> "its output:\n" + peer.tail(20),
        () -> rt.hasWorkers(Calls.ECHO_KEY, 1));
  }

  /**
   * {@code process} once {@code registered} holds; closed, and the failure thrown, when it exits
   * first ({@code output} says why) or does not register in time.
   */
  static <P extends AutoCloseable> P awaitRegistered(
      P process,
      String name,
      BooleanSupplier alive,
      Supplier<String> output,
      BooleanSupplier registered)
      throws Exception {
    try {
      Await.until(
          name + " registered",
          () -> {
            if (!alive.getAsBoolean()) {
              throw new IllegalStateException(name + " exited; " + output.get());
            }
            return registered.getAsBoolean();
          },
          START_TIMEOUT);
      return process;
    } catch (RuntimeException | AssertionError e) {
      process.close();
      throw e;
    }
  }

  /** {@code opts} plus PHRONY_BENCH_HOST_OPTS. */
  static List<String> withExtraOpts(List<String> opts) {
    List<String> all = new ArrayList<>(opts);
    String extra = System.getenv("PHRONY_BENCH_HOST_OPTS");
    if (extra != null && !extra.isBlank()) {
      all.addAll(Arrays.asList(extra.trim().split("\\s+")));
    }
    return all;
  }
}
