package dev.phrony.worker.call;

/**
 * An allocation-free check that a byte array is exactly one JSON value (RFC 8259), for the common
 * case only: ASCII text, at most {@value #MAX_BYTES} bytes, nesting at most {@value #MAX_DEPTH}
 * deep, numbers of at most {@value #MAX_NUMBER} characters. It answers {@code true} only for
 * documents Jackson accepts with its default features; {@code false} means "not vouched for"
 * (invalid, or outside that case), and the caller asks Jackson.
 */
final class JsonScan {
  static final int MAX_BYTES = 64 * 1024;
  static final int MAX_DEPTH = 64;
  static final int MAX_NUMBER = 64;

  private JsonScan() {}

  static boolean certainlyJson(byte[] b) {
    int n = b.length;
    if (n == 0 || n > MAX_BYTES) {
      return false;
    }
    long objects = 0; // bit d-1 set: the container at depth d is an object
    int depth = 0;
    int i = ws(b, 0);
    while (true) {
      // A value starts at i.
      if (i >= n) {
        return false;
      }
      int c = b[i];
      if (c == '{' || c == '[') {
        if (++depth > MAX_DEPTH) {
          return false;
        }
        long bit = 1L << (depth - 1);
        objects = c == '{' ? objects | bit : objects & ~bit;
        i = ws(b, i + 1);
        if (i >= n) {
          return false;
        }
        if (b[i] == (c == '{' ? '}' : ']')) {
          depth--;
          i = ws(b, i + 1);
        } else if (c == '{') {
          if ((i = member(b, i)) < 0) {
            return false;
          }
          continue;
        } else {
          continue;
        }
      } else if (c == '"') {
        if ((i = string(b, i)) < 0) {
          return false;
        }
        i = ws(b, i);
      } else if (c == '-' || (c >= '0' && c <= '9')) {
        if ((i = number(b, i)) < 0) {
          return false;
        }
        i = ws(b, i);
      } else if (c == 't') {
        if ((i = literal(b, i, "true")) < 0) {
          return false;
        }
      } else if (c == 'f') {
        if ((i = literal(b, i, "false")) < 0) {
          return false;
        }
      } else if (c == 'n') {
        if ((i = literal(b, i, "null")) < 0) {
          return false;
        }
      } else {
        return false;
      }
      // A value ended before i: a comma, the end of its container, or the end of the document.
      while (true) {
        if (depth == 0) {
          return i == n;
        }
        if (i >= n) {
          return false;
        }
        boolean object = (objects & (1L << (depth - 1))) != 0;
        int d = b[i];
        if (d == ',') {
          i = ws(b, i + 1);
          if (object && (i = member(b, i)) < 0) {
            return false;
          }
          break; // the next value
        }
        if (d != (object ? '}' : ']')) {
          return false;
        }
        depth--;
        i = ws(b, i + 1);
      }
    }
  }

  /** A member name and its colon at i; returns where its value starts, or -1. */
  private static int member(byte[] b, int i) {
    if (i >= b.length || b[i] != '"' || (i = string(b, i)) < 0) {
      return -1;
    }
    i = ws(b, i);
    if (i >= b.length || b[i] != ':') {
      return -1;
    }
    return ws(b, i + 1);
  }

  /** A string starting at its quote at i; returns the index after its closing quote, or -1. */
  private static int string(byte[] b, int i) {
    int n = b.length;
    for (i++; i < n; ) {
      int c = b[i] & 0xFF;
      if (c == '"') {
        return i + 1;
      }
      if (c < 0x20 || c >= 0x80) {
        return -1; // a raw control character is invalid; non-ASCII is left to Jackson
      }
      if (c != '\\') {
        i++;
        continue;
      }
      if (i + 1 >= n) {
        return -1;
      }
      switch (b[i + 1]) {
        case '"', '\\', '/', 'b', 'f', 'n', 'r', 't' -> i += 2;
        case 'u' -> {
          if (i + 5 >= n || !hex(b[i + 2]) || !hex(b[i + 3]) || !hex(b[i + 4]) || !hex(b[i + 5])) {
            return -1;
          }
          i += 6;
        }
        default -> {
          return -1;
        }
      }
    }
    return -1;
  }

  /** -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? at i; returns the index after it, or -1. */
  private static int number(byte[] b, int i) {
    int n = b.length;
    int start = i;
    if (b[i] == '-') {
      i++;
    }
    if (i >= n || !digit(b[i])) {
      return -1;
    }
    if (b[i] == '0') {
      i++;
    } else {
      while (i < n && digit(b[i])) {
        i++;
      }
    }
    if (i < n && b[i] == '.') {
      i++;
      if (i >= n || !digit(b[i])) {
        return -1;
      }
      while (i < n && digit(b[i])) {
        i++;
      }
    }
    if (i < n && (b[i] == 'e' || b[i] == 'E')) {
      i++;
      if (i < n && (b[i] == '+' || b[i] == '-')) {
        i++;
      }
      if (i >= n || !digit(b[i])) {
        return -1;
      }
      while (i < n && digit(b[i])) {
        i++;
      }
    }
    return i - start > MAX_NUMBER ? -1 : i;
  }

  /** {@code word} at i; returns the index after it (and any whitespace), or -1. */
  private static int literal(byte[] b, int i, String word) {
    int len = word.length();
    if (i + len > b.length) {
      return -1;
    }
    for (int k = 0; k < len; k++) {
      if (b[i + k] != word.charAt(k)) {
        return -1;
      }
    }
    return ws(b, i + len);
  }

  private static int ws(byte[] b, int i) {
    while (i < b.length) {
      byte c = b[i];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
        break;
      }
      i++;
    }
    return i;
  }

  private static boolean digit(byte c) {
    return c >= '0' && c <= '9';
  }

  private static boolean hex(byte c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  }
}
