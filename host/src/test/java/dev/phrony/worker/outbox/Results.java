package dev.phrony.worker.outbox;

import dev.phrony.worker.call.CallOutcome;
import java.nio.charset.StandardCharsets;
import java.time.Instant;

/** Test data. */
public final class Results {
  private Results() {}

  public static HeldResult result(String callId, String sideEffectClass, String json) {
    return new HeldResult(
        callId,
        "session-1",
        "pay.charge@1.0.0",
        sideEffectClass,
        Instant.parse("2026-01-02T03:04:05.123456789Z"),
        new CallOutcome.Payload(json.getBytes(StandardCharsets.UTF_8)));
  }

  public static IntentRecord intent(String callId, Instant at) {
    return new IntentRecord(callId, "session-1", "pay.charge@1.0.0", "non_idempotent_write", at);
  }

  public static String json(HeldResult r) {
    return new String(((CallOutcome.Payload) r.outcome()).bytes(), StandardCharsets.UTF_8);
  }
}
