package dev.phrony.worker.outbox;

import dev.phrony.worker.call.CallOutcome;
import java.time.Instant;
import java.util.Objects;

/**
 * A finished call's result, held until the runtime acknowledges it.
 *
 * @param callId the runtime's call id
 * @param sessionId the agent session, for operators
 * @param toolKey {@code tool@version}
 * @param sideEffectClass the class the handler declares (wire name), which decides durability
 * @param completedAt when the outcome was produced
 * @param outcome payload or tool error
 */
public record HeldResult(
    String callId,
    String sessionId,
    String toolKey,
    String sideEffectClass,
    Instant completedAt,
    CallOutcome outcome) {
  public HeldResult {
    Objects.requireNonNull(callId, "callId");
    Objects.requireNonNull(outcome, "outcome");
  }
}
