package dev.phrony.worker.ops;

/**
 * How an invoke ended on this worker, as counted by {@code phrony_worker_invocations_total}: the
 * {@code outcome} label, and for nacks the {@code code} label (empty otherwise). A closed set, so
 * the meters of each {@code tool@version} are made once and found by ordinal.
 */
public enum InvocationOutcome {
  /** The handler's result was sent. */
  RESULT("result", ""),
  /** An error result: a {@code ToolException}, a failed handler, a result too large. */
  TOOL_ERROR("tool_error", ""),
  /** The call's deadline passed; the handler was interrupted. */
  DEADLINE_EXCEEDED("deadline_exceeded", ""),
  /** The runtime cancelled the call (or a drain timed out); nothing was sent. */
  CANCELLED("cancelled", ""),
  NACK_UNKNOWN_TOOL("nack", "unknown_tool"),
  NACK_CAPACITY_EXHAUSTED("nack", "capacity_exhausted"),
  NACK_INVALID_ARGS("nack", "invalid_args"),
  NACK_DRAINING("nack", "draining"),
  NACK_PREVIOUS_ATTEMPT_INTERRUPTED("nack", "previous_attempt_interrupted");

  private final String outcome;
  private final String code;

  InvocationOutcome(String outcome, String code) {
    this.outcome = outcome;
    this.code = code;
  }

  /** The {@code outcome} label. */
  public String outcome() {
    return outcome;
  }

  /** The {@code code} label: the nack code, or empty. */
  public String code() {
    return code;
  }
}
