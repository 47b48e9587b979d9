package dev.phrony.worker.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import picocli.CommandLine;

/** One command run in-process through picocli, with its exit code and captured output. */
record CliRun(int exit, String out, String err) {

  /** Runs {@code args} on {@code cmd} with stdout and stderr captured. */
  static CliRun execute(CommandLine cmd, String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cmd.setOut(new PrintWriter(out, true));
    cmd.setErr(new PrintWriter(err, true));
    int exit = cmd.execute(args);
    return new CliRun(exit, out.toString(), err.toString());
  }

  /** Runs {@code phrony-worker args...} as {@code Main} would, without exiting the JVM. */
  static CliRun run(String... args) {
    return execute(PhronyWorkerCommand.newCommandLine(args), args);
  }

  /** {@code call ARGS --runtime RUNTIME}: a call on a dev's runtime address. */
  static CliRun call(String runtime, String... args) {
    String[] full = new String[args.length + 3];
    full[0] = "call";
    System.arraycopy(args, 0, full, 1, args.length);
    full[args.length + 1] = "--runtime";
    full[args.length + 2] = runtime;
    return run(full);
  }

  JsonNode json() throws IOException {
    return new ObjectMapper().readTree(out);
  }
}
