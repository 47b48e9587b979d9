package dev.phrony.worker.cli;

import dev.phrony.worker.isolation.PluginExits;

/** The exit statuses of every command; documented in {@code --help} and the README. */
final class ExitCodes {
  /** Done, nothing to report. */
  static final int OK = 0;

  /** The user asked for something that cannot be done as asked: a bad flag, a missing path. */
  static final int USAGE = 1;

  /** Done, but some plugins (or bindings) had problems; the details are in the output. */
  static final int PROBLEMS = 3;

  /**
   * {@code call}: the handler answered with a tool error (an error result or a {@code nack}),
   * printed as {@code code: message} on stderr, as the model would read it.
   */
  static final int TOOL_ERROR = 4;

  /**
   * {@code call}: the runtime got no answer from a worker: no handler serves the tool, every slot
   * stayed busy, the call timed out or was cancelled, the worker went away.
   */
  static final int DISPATCH_ERROR = 5;

  /**
   * {@code call}: no {@code phrony-worker dev} answers at the control address (not started, a wrong
   * address, or shutting down); the message says how to start one.
   */
  static final int CONTROL_UNREACHABLE = 6;

  /**
   * {@code run}, {@code dev}: a core thread of the worker died of an {@link Error}; the log names
   * the thread and the error. Held results are in the outbox: a restart is safe.
   */
  static final int FATAL = 8;

  /**
   * A plugin called {@link System#exit}, {@link Runtime#exit} or {@link Runtime#halt}, whatever
   * status it asked for; stderr names the caller.
   */
  static final int PLUGIN_EXIT = PluginExits.STATUS;

  /** A bug: an exception nothing expected. The stack trace is printed. */
  static final int INTERNAL = 70;

  private ExitCodes() {}
}
