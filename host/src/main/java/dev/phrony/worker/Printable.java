package dev.phrony.worker;

/**
 * Text from outside (call ids, file names, plugin messages) made safe to print on a terminal:
 * characters that move the cursor, recolour or reorder what follows are written as escapes. That is
 * C0 and C1 controls, DEL, and the bidirectional formatting characters (U+202E and its kin), which
 * can make a log line or table row read as something else.
 */
public final class Printable {
  private Printable() {}

  /** Whether {@code c} is shown as an escape. */
  public static boolean unsafe(int c) {
    return c < 0x20
        || (c >= 0x7f && c <= 0x9f) // C0, DEL, C1 (U+009B is CSI)
        || c == 0x061c
        || c == 0x200e
        || c == 0x200f // bidi marks
        || (c >= 0x202a && c <= 0x202e)
        || (c >= 0x2066 && c <= 0x2069) // embeddings, isolates
        || c == 0x2028
        || c == 0x2029
        || c == 0xfeff; // line separators, BOM
  }

  /**
   * {@code text} with each unsafe character as {@code \n}, {@code \r}, {@code \t} or {@code
   * \\uXXXX}.
   */
  public static String of(String text) {
    if (text == null) {
      return "null";
    }
    int i = 0;
    while (i < text.length() && !unsafe(text.charAt(i))) {
      i++;
    }
    if (i == text.length()) {
      return text;
    }
    StringBuilder b = new StringBuilder(text.length() + 16).append(text, 0, i);
    for (; i < text.length(); i++) {
      appendEscaped(b, text.charAt(i));
    }
    return b.toString();
  }

  /** {@code 'text'}, escaped. */
  public static String quote(String text) {
    return "'" + of(text) + "'";
  }

  /**
   * Appends {@code text} in double quotes with {@code "} and {@code \} escaped and each unsafe
   * character as {@link #appendEscaped} writes it: a JSON string (every escape it writes is one of
   * JSON's, and every character JSON must escape is unsafe) that is also safe on a terminal. The
   * logfmt layout's quoted values and the bench's JSON report. {@code null} is written as {@code
   * ""}.
   */
  public static void appendQuoted(StringBuilder b, String text) {
    b.append('"');
    if (text != null) {
      for (int i = 0; i < text.length(); i++) {
        char c = text.charAt(i);
        switch (c) {
          case '"' -> b.append("\\\"");
          case '\\' -> b.append("\\\\");
          default -> appendEscaped(b, c);
        }
      }
    }
    b.append('"');
  }

  /** Appends {@code c}, escaped if it is unsafe. */
  public static void appendEscaped(StringBuilder b, char c) {
    if (!unsafe(c)) {
      b.append(c);
      return;
    }
    switch (c) {
      case '\n' -> b.append("\\n");
      case '\r' -> b.append("\\r");
      case '\t' -> b.append("\\t");
      default -> {
        String hex = Integer.toHexString(c);
        b.append("\\u");
        for (int pad = hex.length(); pad < 4; pad++) {
          b.append('0');
        }
        b.append(hex);
      }
    }
  }
}
