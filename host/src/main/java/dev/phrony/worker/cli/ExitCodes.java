package dev.phrony.worker.cli;

/** The exit statuses of every command; documented in {@code --help} and the README. */
final class ExitCodes {
  /** Done, nothing to report. */
  static final int OK = 0;
  /** The user asked for something that cannot be done as asked: a bad flag, a missing path. */
  static final int USAGE = 1;
  /** Done, but some plugins (or bindings) had problems; the details are in the output. */
  static final int PROBLEMS = 3;
  /** A bug: an exception nothing expected. The stack trace is printed. */
  static final int INTERNAL = 70;

  private ExitCodes() {}
}
