package dev.phrony.worker.ops;

import java.util.HashMap;
import java.util.Map;
import org.slf4j.MDC;

/**
 * The logging context (MDC) of a call: {@code call_id}, {@code session_id} and {@code tool} on
 * every line about it, whichever thread logs it (the handler's, or the stream's for per-call lines
 * such as nacks). Both log formats print these as fields.
 *
 * <p>The whole context is swapped in and out, not key by key: an asynchronous handler starts on the
 * stream's one I/O thread, and a key it puts there must end with its call, not ride along on every
 * later line of that thread (other calls', heartbeats, reconnects).
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

  /** Closes a scope that found no context (the usual case): none is left. */
  private static final Scope CLEAR = MDC::clear;

  /**
   * Sets the call's keys on this thread until the scope closes; null or empty values are left out.
   * Closing it puts back exactly the context that was there before.
   */
  public static Scope call(String callId, String sessionId, String tool) {
    Map<String, String> before = MDC.getCopyOfContextMap(); // null when there is none
    if (before == null || before.isEmpty()) {
      // The usual case (every call on the I/O thread): put the keys straight into the adapter's
      // map, not into a map of our own that setContextMap would copy again (two maps per call).
      put(CALL_ID, callId);
      put(SESSION_ID, sessionId);
      put(TOOL, tool);
      return CLEAR;
    }
    Map<String, String> now = new HashMap<>(before);
    set(now, CALL_ID, callId);
    set(now, SESSION_ID, sessionId);
    set(now, TOOL, tool);
    MDC.setContextMap(now);
    return () -> MDC.setContextMap(before);
  }

  private static void put(String key, String value) {
    if (value != null && !value.isEmpty()) {
      MDC.put(key, value);
    }
  }

  private static void set(Map<String, String> mdc, String key, String value) {
    if (value == null || value.isEmpty()) {
      mdc.remove(key);
    } else {
      mdc.put(key, value);
    }
  }
}
