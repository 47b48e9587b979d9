package dev.phrony.worker.bench;

import java.util.List;

/** Row 3b (step {@code 1000}): the host's echo sleeping 50 ms, 1 000 calls at a time. */
final class Echo1000Row implements Scenario {
  @Override
  public void run(Sitting s) throws Exception {
    try (HostProcess host =
        s.hosts().start(s.runtime(), "host-1000", List.of(), Calls.echoSlots(1000))) {
      Driver sleepy = new Driver(s.runtime(), Calls.echo(Calls.sleep(50), "s1000"), host);
      Driver.Result r = sleepy.run(1000, s.warmup(), s.measure());
      s.report()
          .add(
              Paired.hostRow(
                  "3b",
                  "host: 50 ms handler, concurrency 1 000",
                  r,
                  1000 / 0.05,
                  "ideal (1000/50 ms)",
                  0.9));
    }
  }
}
