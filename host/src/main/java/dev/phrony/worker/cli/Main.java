package dev.phrony.worker.cli;

import picocli.CommandLine;

/** Process entry point: the only place that calls {@link System#exit}. */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    ProcessGuard.install();
    CommandLine cmd = PhronyWorkerCommand.newCommandLine(args);
    int status = cmd.execute(args);
    flush(cmd);
    ProcessGuard.exit(status);
  }

  /**
   * Flushes the writers of {@code cmd} and its subcommands: picocli's flush only on a newline, and
   * System.exit flushes none, so output printed without a newline at its end would be lost.
   */
  static void flush(CommandLine cmd) {
    cmd.getOut().flush();
    cmd.getErr().flush();
    cmd.getSubcommands().values().forEach(Main::flush);
  }
}
