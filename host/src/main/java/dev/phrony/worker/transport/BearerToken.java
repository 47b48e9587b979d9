package dev.phrony.worker.transport;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;

/**
 * The bearer token sent as {@code authorization: Bearer <token>} on each Work stream, for a
 * TLS-terminating proxy or mesh in front of the runtime. A file token is read again for every new
 * stream, so a rotated token (a projected service-account token, a renewed secret) is picked up at
 * the next reconnect. The token never appears in {@link #toString()}, logs or messages.
 */
public sealed interface BearerToken {

  /** The token, read now. */
  String value() throws IOException;

  /** Where it comes from, safe to print. */
  String describe();

  /** A fixed token (from the environment). */
  static BearerToken of(String token) {
    return new Fixed(check(token, "the token"));
  }

  /** A token read from {@code file} (surrounding whitespace ignored) whenever a stream opens. */
  static BearerToken fromFile(Path file) {
    return new FromFile(file);
  }

  private static String check(String token, String what) {
    String t = Objects.requireNonNull(token, "token").strip();
    if (t.isEmpty()) {
      throw new IllegalArgumentException(what + " is empty");
    }
    for (int i = 0; i < t.length(); i++) {
      char c = t.charAt(i);
      if (c < 0x21 || c > 0x7e) {
        throw new IllegalArgumentException(
            what
                + " has a space, control or non-ASCII character"
                + " at position "
                + (i + 1)
                + "; a bearer token is one printable ASCII word");
      }
    }
    return t;
  }

  /** A token given as a value. */
  record Fixed(String token) implements BearerToken {
    @Override
    public String value() {
      return token;
    }

    @Override
    public String describe() {
      return "a token from the environment";
    }

    @Override
    public String toString() {
      return "BearerToken[<redacted>]";
    }
  }

  /** A token kept in a file. */
  record FromFile(Path file) implements BearerToken {
    public FromFile {
      Objects.requireNonNull(file, "file");
    }

    @Override
    public String value() throws IOException {
      String text = Files.readString(file, StandardCharsets.UTF_8);
      try {
        return check(text, "token file " + file);
      } catch (IllegalArgumentException e) {
        throw new IOException(e.getMessage());
      }
    }

    @Override
    public String describe() {
      return "the token in " + file;
    }

    @Override
    public String toString() {
      return "BearerToken[file " + file + "]";
    }
  }
}
