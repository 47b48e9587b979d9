package dev.phrony.worker.cli;

/** Process entry point: the only place that calls {@link System#exit}. */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    ProcessGuard.install();
    ProcessGuard.exit(PhronyWorkerCommand.newCommandLine(args).execute(args));
  }
}
