package dev.phrony.worker.harness;

import java.util.Objects;

/**
 * What a call through the harness produced, as the worker would send it in a {@code result}: a
 * payload, or a tool error (a nack the worker would send is an error with the nack's code).
 *
 * <p>The harness's own type, on the test's class path: the worker's pipeline, which the harness
 * runs apart from that class path, answers with one of these.
 */
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
}
