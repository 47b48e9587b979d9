package dev.phrony.worker.bench;

import dev.phrony.worker.testkit.LocalRuntime;
import java.nio.file.Path;
import java.time.Duration;

/**
 * What the scenarios of one {@code bin/bench} run share: the options, the report, the hosts'
 * numbering, the LocalRuntime that the runner keeps open across the steps that use it, and the
 * ceiling's two processes, started on first use (rows 1 and 2 measure against it).
 */
final class Sitting {
  private final Options options;
  private final Report report = new Report();
  private final Hosts hosts;
  private LocalRuntime runtime;
  private Ceiling ceiling;

  Sitting(Options options) {
    this.options = options;
    this.hosts = new Hosts(options.dist(), options.work());
  }

  Options options() {
    return options;
  }

  boolean quick() {
    return options.quick();
  }

  Duration warmup() {
    return options.warmup();
  }

  Duration measure() {
    return options.measure();
  }

  Path work() {
    return options.work();
  }

  Report report() {
    return report;
  }

  Hosts hosts() {
    return hosts;
  }

  /** The shared LocalRuntime: only while the runner has it open. */
  LocalRuntime runtime() {
    if (runtime == null) {
      throw new IllegalStateException("no shared runtime outside the steps that share it");
    }
    return runtime;
  }

  void runtime(LocalRuntime runtime) {
    this.runtime = runtime;
  }

  /** The ceiling's server and client, started on first use and kept until closed. */
  Ceiling ceiling() throws Exception {
    if (ceiling == null) {
      ceiling =
          Ceiling.start(Calls.ARGS, work().resolve("ceiling-client.log"), Hosts.START_TIMEOUT);
    }
    return ceiling;
  }

  void closeCeiling() throws InterruptedException {
    if (ceiling != null) {
      ceiling.close();
      ceiling = null;
    }
  }
}
