package dev.phrony.worker.outbox;

import java.time.Instant;
import java.util.Objects;

/**
 * A call whose handler is about to run and must never run twice: recorded durably first, so a crash
 * before its result is held leaves it <em>interrupted</em>.
 *
 * @param callId the runtime's call id
 * @param sessionId the agent session, for operators
 * @param toolKey {@code tool@version}
 * @param sideEffectClass wire name ({@code non_idempotent_write} or {@code irreversible_action})
 * @param startedAt when the handler was about to start
 */
public record IntentRecord(
    String callId, String sessionId, String toolKey, String sideEffectClass, Instant startedAt) {
  public IntentRecord {
    Objects.requireNonNull(callId, "callId");
    Objects.requireNonNull(startedAt, "startedAt");
  }
}
