package dev.phrony.worker.cli;

import picocli.CommandLine;

/** Process entry point: the only place that calls {@link System#exit}. */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    System.exit(PhronyWorkerCommand.newCommandLine().execute(args));
  }
}
