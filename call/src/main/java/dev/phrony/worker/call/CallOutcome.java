package dev.phrony.worker.call;

import java.util.Objects;

/** What a call produced, as sent in a {@code result}: a payload or a tool error. */
public sealed interface CallOutcome permits CallOutcome.Payload, CallOutcome.Error {

  /** A successful result; the bytes reach the model as text (JSON by convention). */
  record Payload(byte[] bytes) implements CallOutcome {
    public Payload {
      Objects.requireNonNull(bytes, "bytes");
    }
  }

  /** A tool error {@code code: message}. */
  record Error(String code, String message) implements CallOutcome {
    public Error {
      Objects.requireNonNull(code, "code");
      message = message == null ? "" : message;
    }
  }

  static CallOutcome error(String code, String message) {
    return new Error(code, message);
  }

  /** Size on the wire of the outcome's variable part. */
  default int size() {
    return switch (this) {
      case Payload p -> p.bytes().length;
      case Error e -> e.code().length() + e.message().length();
    };
  }
}
