package dev.phrony.worker.ops;

import org.slf4j.MDC;

/**
 * The logging context (MDC) of a call: {@code call_id}, {@code session_id} and {@code tool} on
 * every line about it, whichever thread logs it (the handler's, or the stream's for per-call
 * lines such as nacks). Both log formats print these as fields.
 */
public final class LogContext {
  public static final String CALL_ID = "call_id";
  public static final String SESSION_ID = "session_id";
  public static final String TOOL = "tool";

  private LogContext() {}

  /** Restores the context that was there before. */
  @FunctionalInterface
  public interface Scope extends AutoCloseable {
    @Override
    void close();
  }

  /** Sets the call's keys on this thread until the scope closes; null values are left out. */
  public static Scope call(String callId, String sessionId, String tool) {
    String prevCall = MDC.get(CALL_ID);
    String prevSession = MDC.get(SESSION_ID);
    String prevTool = MDC.get(TOOL);
    set(CALL_ID, callId);
    set(SESSION_ID, sessionId);
    set(TOOL, tool);
    return () -> {
      set(CALL_ID, prevCall);
      set(SESSION_ID, prevSession);
      set(TOOL, prevTool);
    };
  }

  private static void set(String key, String value) {
    if (value == null || value.isEmpty()) {
      MDC.remove(key);
    } else {
      MDC.put(key, value);
    }
  }
}
