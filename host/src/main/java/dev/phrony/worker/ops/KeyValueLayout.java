package dev.phrony.worker.ops;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.CoreConstants;
import ch.qos.logback.core.LayoutBase;
import dev.phrony.worker.Printable;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.event.KeyValuePair;

/**
 * One line per event in {@code key=value} form (logfmt):
 *
 * <pre>
 * ts=2025-01-31T12:00:00.000Z level=INFO logger=WorkClient thread=phrony-work-loop call_id=c-1 session_id=s-1 tool=echo@default msg="reconnect in 250 ms"
 * </pre>
 *
 * <p>The logging context (MDC) and SLF4J key-value pairs follow {@code thread}, the call's keys
 * first; the message is always quoted; other values are quoted when they hold a space, a quote, an
 * {@code =} or a control character, with {@code \"}, {@code \\}, {@code \n}, {@code \t} escapes, so
 * a value never breaks the line. An exception adds {@code error="Class: message"} and {@code
 * stack="..."} (escaped, still on the same line).
 */
public final class KeyValueLayout extends LayoutBase<ILoggingEvent> {
  private static final DateTimeFormatter TS =
      DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", Locale.ROOT)
          .withZone(ZoneOffset.UTC);
  private static final List<String> FIRST =
      List.of(LogContext.CALL_ID, LogContext.SESSION_ID, LogContext.TOOL);

  @Override
  public String doLayout(ILoggingEvent event) {
    StringBuilder b = new StringBuilder(256);
    b.append("ts=").append(TS.format(Instant.ofEpochMilli(event.getTimeStamp())));
    b.append(" level=").append(event.getLevel());
    field(b, "logger", simpleName(event.getLoggerName()));
    field(b, "thread", event.getThreadName());
    Map<String, String> mdc = event.getMDCPropertyMap();
    if (mdc != null && !mdc.isEmpty()) {
      for (String key : FIRST) {
        String v = mdc.get(key);
        if (v != null) {
          field(b, key, v);
        }
      }
      for (Map.Entry<String, String> e : new TreeMap<>(mdc).entrySet()) {
        if (!FIRST.contains(e.getKey())) {
          field(b, e.getKey(), e.getValue());
        }
      }
    }
    List<KeyValuePair> pairs = event.getKeyValuePairs();
    if (pairs != null) {
      for (KeyValuePair p : pairs) {
        field(b, p.key, String.valueOf(p.value));
      }
    }
    b.append(" msg=");
    Printable.appendQuoted(b, event.getFormattedMessage());
    IThrowableProxy t = event.getThrowableProxy();
    if (t != null) {
      b.append(" error=");
      Printable.appendQuoted(
          b, t.getClassName() + (t.getMessage() == null ? "" : ": " + t.getMessage()));
      b.append(" stack=");
      Printable.appendQuoted(b, ThrowableProxyUtil.asString(t).strip());
    }
    return b.append(CoreConstants.LINE_SEPARATOR).toString();
  }

  private static String simpleName(String logger) {
    int dot = logger == null ? -1 : logger.lastIndexOf('.');
    return dot < 0 ? logger : logger.substring(dot + 1);
  }

  private static void field(StringBuilder b, String key, String value) {
    b.append(' ').append(key).append('=');
    if (needsQuotes(value)) {
      Printable.appendQuoted(b, value);
    } else {
      b.append(value);
    }
  }

  static boolean needsQuotes(String v) {
    if (v == null || v.isEmpty()) {
      return true;
    }
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      if (c <= ' ' || c == '"' || c == '=' || c == '\\' || Printable.unsafe(c)) {
        return true;
      }
    }
    return false;
  }
}
