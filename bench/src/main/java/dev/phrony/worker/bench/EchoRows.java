package dev.phrony.worker.bench;

import dev.phrony.worker.testkit.LocalRuntime;
import java.util.List;

/**
 * Rows 2a-2d, 3a and 3c (step {@code 64}; {@code c1}, {@code c64}, {@code s64} pick some): the
 * host's echo with 64 slots beside the two stand-in peers on the shared runtime, each measured
 * {@link Paired}: the no-op at concurrency 1 and 64 (with the ceiling), and a 50 ms handler at
 * concurrency 64 (against the ideal rate).
 */
final class EchoRows implements Scenario {
  @Override
  public void run(Sitting s) throws Exception {
    LocalRuntime runtime = s.runtime();
    Report report = s.report();
    try (HostProcess host = s.hosts().start(runtime, "host-64", List.of(), Calls.echoSlots(64));
        PeerProcess inline = s.hosts().startPeer(runtime, "inline");
        PeerProcess threads = s.hosts().startPeer(runtime, "threads")) {
      Driver noop = new Driver(runtime, Calls.echo(Calls.ARGS, "noop"), host);
      Driver inlineNoop = peerDriver(runtime, inline, Calls.ARGS, "noop");
      Driver threadsNoop = peerDriver(runtime, threads, Calls.ARGS, "noop");
      if (s.options().row("c1")) {
        Paired c1 = Paired.measure(s, 1, noop, inlineNoop, threadsNoop, true);
        report.add(
            Paired.hostRow(
                "2a",
                "host: no-op (echo), concurrency 1",
                c1.host(),
                c1.ceiling(),
                "ping-pong ceiling (paired)",
                0.5));
        c1.addPeerRows(report, "2c", "host: no-op, concurrency 1", 0.9, 1.0);
      }
      if (s.options().row("c64")) {
        Paired c64 = Paired.measure(s, 64, noop, inlineNoop, threadsNoop, true);
        report.add(
            Paired.hostRow(
                "2b",
                "host: no-op (echo), concurrency 64",
                c64.host(),
                c64.ceiling(),
                "pipelined ceiling (paired)",
                0.5));
        c64.addPeerRows(report, "2d", "host: no-op, concurrency 64", 1.1, 1.1);
      }
      if (s.options().row("s64")) {
        byte[] sleep = Calls.sleep(50);
        Paired s64 =
            Paired.measure(
                s,
                64,
                new Driver(runtime, Calls.echo(sleep, "s64"), host),
                peerDriver(runtime, inline, sleep, "s64"),
                peerDriver(runtime, threads, sleep, "s64"),
                false);
        report.add(
            Paired.hostRow(
                "3a",
                "host: 50 ms handler, concurrency 64",
                s64.host(),
                64 / 0.05,
                "ideal (64/50 ms)",
                0.97));
        s64.addPeerRows(report, "3c", "host: 50 ms handler, concurrency 64", 1.0, 1.0);
      }
    }
  }

  /** Calls of the peer's own echo version, so that it shares the runtime with the host. */
  private static Driver peerDriver(
      LocalRuntime runtime, PeerProcess peer, byte[] args, String tag) {
    return new Driver(
        runtime,
        Calls.call("echo", peer.version, args, "read_only", peer.shape + "-" + tag),
        peer.pid(),
        null);
  }
}
