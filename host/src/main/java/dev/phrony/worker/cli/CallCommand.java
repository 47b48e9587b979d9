package dev.phrony.worker.cli;

import dev.phrony.worker.config.DurationParser;
import dev.phrony.worker.dev.CallReply;
import dev.phrony.worker.dev.CallRequest;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code phrony-worker call}: one tool call through a running {@code phrony-worker dev}. */
@Command(name = "call", mixinStandardHelpOptions = true,
    description = {
        "Calls a tool through a running 'phrony-worker dev', as an agent session would.",
        "",
        "Prints the result as pretty JSON (as is, when it is not JSON).",
        "A tool error prints 'code: message' on stderr; so does a dispatch error (no handler, "
            + "no free slot, timeout), with a hint."},
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
        "0:the tool returned a result",
        "1:usage error (bad flag, arguments that are not JSON, a request dev refused)",
        "4:the tool answered with an error",
        "5:no handler, no free slot, or another dispatch error",
        "6:no phrony-worker dev at the control address (start it with 'phrony-worker dev')"})
final class CallCommand implements Callable<Integer> {

  @Parameters(index = "0", paramLabel = "TOOL[@VERSION]",
      description = "The tool, e.g. weather.get-forecast@1.0.0; without @VERSION, the "
          + "unversioned handler (version 'default').")
  private String target;

  @Parameters(index = "1", arity = "0..1", paramLabel = "ARGS_JSON",
      description = "The arguments as one JSON value (default: {}). Quote it for the shell: "
          + "'{\"city\":\"Oslo\"}'.")
  private String args;

  @Option(names = "--args-file", paramLabel = "FILE",
      description = "Read the arguments from FILE ('-': stdin) instead.")
  private Path argsFile;

  @Mixin
  private ControlOption control;

  @Option(names = "--session", paramLabel = "ID",
      description = "Session of the call (call ids then number up within it, and "
          + "'POST /v1/sessions/ID/cancel' cancels it). Default: a new session per call.")
  private String session;

  @Option(names = "--timeout", paramLabel = "DURATION", converter = DurationParser.class,
      description = "The call's deadline, e.g. 30s, 500ms or 2m: the handler sees it, and the "
          + "call ends when it passes. Default: the runtime's dispatch wait (10s).")
  private Duration timeout;

  @CommandLine.Spec
  private CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    if (timeout != null && timeout.isZero()) {
      throw new CommandLine.ParameterException(spec.commandLine(),
          "--timeout must be more than 0, e.g. 30s");
    }
    String given = ArgsFile.choose(spec, args, "ARGS_JSON", argsFile);
    String json = given != null ? given : "{}";
    CallRequest request = CallRequest.of(target, json, session, timeout);
    CallReply reply = control.client().call(request);

    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
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
}
