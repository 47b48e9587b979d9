package dev.phrony.worker.bench;

import dev.phrony.worker.testkit.Call;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.LongFunction;

/** The calls the rows send: their args, and call ids numbered per driver. */
final class Calls {
  /** The host's bundled echo handler, the no-op of most rows. */
  static final String ECHO_KEY = "echo@default";

  /** ~64 bytes of JSON args, the same for the ceiling and the no-op host calls. */
  static final byte[] ARGS =
      "{\"city\":\"Oslo\",\"days\":3,\"units\":\"metric\",\"lang\":\"en-GB\",\"x\":1}"
          .getBytes(StandardCharsets.UTF_8);

  static final byte[] PAY_ARGS =
      "{\"amount\":12.5,\"currency\":\"EUR\",\"payee\":\"ACME\"}".getBytes(StandardCharsets.UTF_8);

  private Calls() {}

  /** Args that make echo wait {@code ms} before it answers. */
  static byte[] sleep(long ms) {
    return ("{\"sleep_ms\":" + ms + "}").getBytes(StandardCharsets.UTF_8);
  }

  /** The flag that gives the host's echo handler {@code n} slots. */
  static List<String> echoSlots(int n) {
    return List.of("--handler", ECHO_KEY + ":max-concurrency=" + n);
  }

  /** {@code echo@default} calls of session {@code s-bench-TAG}. */
  static LongFunction<Call> echo(byte[] args, String tag) {
    return call("echo", "default", args, "read_only", tag);
  }

  /** Calls of session {@code s-bench-TAG}, the sequence number in each call id. */
  static LongFunction<Call> call(
      String tool, String version, byte[] args, String sideEffect, String tag) {
    String session = "s-bench-" + tag;
    return seq ->
        new Call(
            session + ":av-bench:1:" + seq,
            session,
            "av-bench",
            1,
            tool,
            version,
            args,
            sideEffect,
            0);
  }
}
