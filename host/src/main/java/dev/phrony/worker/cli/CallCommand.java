package dev.phrony.worker.cli;

import dev.phrony.runtime.v1.RunSessionInteractiveApprovalRequired;
import dev.phrony.worker.config.DurationParser;
import dev.phrony.worker.dev.ApprovalPrompt;
import dev.phrony.worker.dev.ApprovalsClient;
import dev.phrony.worker.dev.CallClient;
import dev.phrony.worker.dev.CallReply;
import dev.phrony.worker.dev.CallRequest;
import dev.phrony.worker.dev.ControlClient;
import dev.phrony.worker.dev.SessionFollower;
import java.io.BufferedReader;
import java.io.Console;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.function.Consumer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code phrony-worker call}: one tool call through a running {@code phrony-worker dev}. */
@Command(
    name = "call",
    mixinStandardHelpOptions = true,
    description = {
      "Calls a tool through a running 'phrony-worker dev', as an agent session would: a "
          + "client of the runtime's session API (RunSessionInteractive) on dev's runtime "
          + "address.",
      "",
      "Prints the result as pretty JSON (as is, when it is not JSON).",
      "A tool error prints 'code: message' on stderr; so does a dispatch error (no handler, "
          + "no free slot, timeout), with a hint.",
      "",
      "A call dev holds for approval (dev --require-approval) waits for its answer: on a "
          + "terminal, call shows it and asks 'approve? [y/N/e(dit)]'; otherwise it prints "
          + "the approval id on stderr, for 'phrony-worker approve ID' or 'deny ID'. A "
          + "denied or expired call is a tool error (approval_denied, approval_expired).",
      "",
      "With --session ID --follow, call makes no call: it attaches to that session and "
          + "prints its events (tool_call, approval_required, tool_result...), one JSON object "
          + "per line, as they happen, until the session ends or Ctrl-C. With --control, it "
          + "prints the control API's events of the session instead, until dev stops."
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:the tool returned a result",
      "1:usage error (bad flag, arguments that are not JSON, a request dev refused)",
      "4:the tool answered with an error (including approval_denied, approval_expired)",
      "5:no handler, no free slot, or another dispatch error",
      "6:no phrony-worker dev at the runtime address (start it with 'phrony-worker dev')"
    })
final class CallCommand implements Callable<Integer> {

  @Parameters(
      index = "0",
      arity = "0..1",
      paramLabel = "TOOL[@VERSION]",
      description =
          "The tool, e.g. weather.get-forecast@1.0.0; without @VERSION, the "
              + "unversioned handler (version 'default').")
  private String target;

  @Parameters(
      index = "1",
      arity = "0..1",
      paramLabel = "ARGS_JSON",
      description =
          "The arguments as one JSON value (default: {}). Quote it for the shell: "
              + "'{\"city\":\"Oslo\"}'.")
  private String args;

  @Option(
      names = "--args-file",
      paramLabel = "FILE",
      description = "Read the arguments from FILE ('-': stdin) instead.")
  private Path argsFile;

  @Mixin private ControlOption control;

  @Option(
      names = "--runtime",
      paramLabel = "ADDR",
      description =
          "The runtime address of 'phrony-worker dev' (or, with --follow, of a Phrony runtime):"
              + " calls go over its session API (RunSessionInteractive), and --follow attaches to"
              + " a session there. Default: $"
              + ApprovalsClient.ENV_RUNTIME
              + ", else "
              + ApprovalsClient.DEFAULT_RUNTIME
              + ".")
  private String runtime;

  @Option(
      names = "--session",
      paramLabel = "ID",
      description =
          "Session of the call: each call is a turn of it (call ids SESSION:AGENT_VERSION:TURN:0),"
              + " it is made by its first call, and CancelSession cancels it. Default: a new"
              + " session per call.")
  private String session;

  @Option(
      names = "--follow",
      description =
          "With --session ID: print the session's events as they happen instead of "
              + "making a call.")
  private boolean follow;

  @Option(
      names = "--timeout",
      paramLabel = "DURATION",
      converter = DurationParser.class,
      description =
          "The call's deadline, e.g. 30s, 500ms or 2m: the handler sees it, and the "
              + "call ends when it passes. Default: the runtime's dispatch wait (10s).")
  private Duration timeout;

  @CommandLine.Spec private CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    if (follow) {
      return follow();
    }
    if (target == null) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "TOOL[@VERSION] is required" + " (or --session ID --follow to print a session's events)");
    }
    if (control.flagGiven()) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "call makes its calls over the runtime's session API: give dev's runtime address"
              + " with --runtime ADDR (--control is for --follow of the control API's events)");
    }
    if (timeout != null && timeout.isZero()) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--timeout must be more than 0, e.g. 30s");
    }
    String given = ArgsFile.choose(spec, args, "ARGS_JSON", argsFile);
    String json = given != null ? given : "{}";
    CallRequest request = CallRequest.of(target, json, session, timeout);
    CallClient client = CallClient.of(runtimeAddress());
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    CallReply reply;
    try (ApprovalsClient approvals = ApprovalsClient.of(client.target())) {
      reply = client.call(request, held(approvals, err));
    }

    switch (reply.kind()) {
      case RESULT -> {
        out.println(reply.payload());
        out.flush();
        return ExitCodes.OK;
      }
      case TOOL_ERROR -> {
        err.println(reply.errorLine());
        err.flush();
        return ExitCodes.TOOL_ERROR;
      }
      default -> {
        err.println(reply.errorLine());
        if (reply.hint() != null) {
          err.println("hint: " + reply.hint());
        }
        err.flush();
        return ExitCodes.DISPATCH_ERROR;
      }
    }
  }

  /** {@code --runtime}, else {@code $PHRONY_RUNTIME_ADDR}, else dev's default. */
  private String runtimeAddress() {
    if (runtime != null) {
      return runtime;
    }
    String env = System.getenv(ApprovalsClient.ENV_RUNTIME);
    return env != null && !env.isBlank() ? env : ApprovalsClient.DEFAULT_RUNTIME;
  }

  /**
   * What to do when the call is held for approval: ask on a terminal, else say on stderr which
   * approval to answer.
   */
  private Consumer<RunSessionInteractiveApprovalRequired> held(
      ApprovalsClient approvals, PrintWriter err) {
    Console console = System.console();
    if (isTerminal(console)) {
      ApprovalPrompt prompt =
          new ApprovalPrompt(
              new BufferedReader(console.reader()),
              console.writer(),
              ApprovalPrompt.deciding(approvals));
      return prompt::ask;
    }
    String where =
        ApprovalsClient.DEFAULT_RUNTIME.equals(approvals.target())
            ? ""
            : " --runtime " + approvals.target();
    return approval -> {
      String id = approval.getApprovalId();
      err.println(
          "call: held for approval "
              + id
              + " ("
              + approval.getReason()
              + "); answer with: bin/phrony-worker approve "
              + id
              + where
              + " [--args JSON] | bin/phrony-worker deny "
              + id
              + where);
      err.flush();
    };
  }

  /**
   * True when {@code console} is an interactive terminal. From JDK 22 {@link System#console()} also
   * returns a console when the streams are redirected; its {@code isTerminal()} tells.
   */
  private static boolean isTerminal(Console console) {
    if (console == null) {
      return false;
    }
    try {
      return (Boolean) Console.class.getMethod("isTerminal").invoke(console);
    } catch (NoSuchMethodException e) {
      return true; // JDK 21: there is a console only on a terminal
    } catch (ReflectiveOperationException e) {
      return false;
    }
  }

  /** {@code --session ID --follow}: the session's events, one line each, until dev stops. */
  private int follow() {
    if (session == null) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--follow needs --session ID: the session whose events to print");
    }
    if (target != null || args != null || argsFile != null || timeout != null) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--follow prints a"
              + " session's events and makes no call: leave out TOOL, its arguments and --timeout");
    }
    PrintWriter out = spec.commandLine().getOut();
    if (runtime == null && control.given()) {
      // dev's control API's events: followed before the session exists, one line each.
      try (ControlClient.EventStream events = control.client().events(session, 0, true)) {
        for (String line = events.next(); line != null; line = events.next()) {
          out.println(line);
          out.flush();
        }
      }
      return ExitCodes.OK;
    }
    try {
      SessionFollower.follow(runtimeAddress(), session, out);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return ExitCodes.OK;
  }
}
