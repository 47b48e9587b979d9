package dev.phrony.worker.work;

import dev.phrony.worker.testkit.Call;

/**
 * Invokes for tests that drive the dispatcher without a stream: testkit's {@link Call} as the
 * worker reads it off the wire.
 */
final class TestInvokes {
  private TestInvokes() {}

  static Inbound.Invoke invoke(Call call) {
    return Inbound.Invoke.of(call.toInvoke());
  }

  /** An invoke of {@code tool@1.0.0} with {@code args}, in session {@code s1}. */
  static Inbound.Invoke invoke(String callId, String tool, String args) {
    return invoke(Call.of(callId, "s1", tool, "1.0.0", args));
  }

  /** The same, with the session's deadline ({@code 0}: none). */
  static Inbound.Invoke invoke(String callId, String tool, String args, long deadlineUnixMs) {
    Call c = Call.of(callId, "s1", tool, "1.0.0", args);
    return invoke(
        deadlineUnixMs == 0 ? c : c.withDeadline(java.time.Instant.ofEpochMilli(deadlineUnixMs)));
  }
}
