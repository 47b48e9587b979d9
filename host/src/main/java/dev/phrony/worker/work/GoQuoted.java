package dev.phrony.worker.work;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * Go's {@code %q} strings, read back: the runtime quotes call ids in its status texts that way, and
 * only an exact unquote tells {@code "s:1:12"} from {@code "s:1:1"}. (The inverse, for tests that
 * write such texts, is the testkit's {@code Wire.quote}.)
 */
final class GoQuoted {
  private GoQuoted() {}

  /** Go's {@code strconv.Unquote} of the double-quoted string starting at {@code from}. */
  static Optional<String> unquote(String s, int from) {
    if (from >= s.length() || s.charAt(from) != '"') {
      return Optional.empty();
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int i = from + 1;
    while (i < s.length()) {
      char c = s.charAt(i);
      if (c == '"') {
        return Optional.of(out.toString(StandardCharsets.UTF_8));
      }
      if (c != '\\') {
        int cp = s.codePointAt(i);
        out.writeBytes(new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8));
        i += Character.charCount(cp);
        continue;
      }
      if (i + 1 >= s.length()) {
        return Optional.empty();
      }
      char e = s.charAt(i + 1);
      i += 2;
      switch (e) {
        case 'a' -> out.write(7);
        case 'b' -> out.write('\b');
        case 'f' -> out.write('\f');
        case 'n' -> out.write('\n');
        case 'r' -> out.write('\r');
        case 't' -> out.write('\t');
        case 'v' -> out.write(0x0b);
        case '\\', '"', '\'' -> out.write(e);
        case 'x', 'u', 'U' -> {
          int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (i + n > s.length()) {
            return Optional.empty();
          }
          int v;
          try {
            v = Integer.parseUnsignedInt(s.substring(i, i + n), 16);
          } catch (NumberFormatException ex) {
            return Optional.empty();
          }
          i += n;
          if (e == 'x') {
            out.write(v); // one raw byte
          } else if (Character.isValidCodePoint(v)) {
            out.writeBytes(new String(Character.toChars(v)).getBytes(StandardCharsets.UTF_8));
          } else {
            return Optional.empty();
          }
        }
        default -> {
          if (e < '0' || e > '7' || i + 2 > s.length()) {
            return Optional.empty();
          }
          try {
            out.write(Integer.parseInt(s.substring(i - 1, i + 2), 8));
          } catch (NumberFormatException ex) {
            return Optional.empty();
          }
          i += 2;
        }
      }
    }
    return Optional.empty(); // no closing quote
  }
}
