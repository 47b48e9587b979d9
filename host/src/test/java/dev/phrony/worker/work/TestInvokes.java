package dev.phrony.worker.work;

import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.WorkInvoke;

/** Invokes for tests that drive the dispatcher without a stream. */
final class TestInvokes {
  private TestInvokes() {}

  /** An invoke of {@code tool@version} with {@code args}, in session {@code s-<callId>}. */
  static Inbound.Invoke invoke(String callId, String tool, String version, String args) {
    return Inbound.Invoke.of(
        WorkInvoke.newBuilder()
            .setCallId(callId)
            .setSessionId("s-" + callId)
            .setTool(tool)
            .setVersion(version)
            .setArgs(ByteString.copyFromUtf8(args))
            .build());
  }
}
