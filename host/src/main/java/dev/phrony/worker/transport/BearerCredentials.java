package dev.phrony.worker.transport;

import io.grpc.CallCredentials;
import io.grpc.Metadata;
import io.grpc.SecurityLevel;
import io.grpc.Status;
import java.io.IOException;
import java.util.concurrent.Executor;

/**
 * Adds {@code authorization: Bearer <token>} to each Work stream, and refuses to send it over a
 * connection without TLS unless that was allowed explicitly ({@code --allow-insecure-token}, for a
 * plaintext hop to a local sidecar).
 */
final class BearerCredentials extends CallCredentials {
  static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  private final BearerToken token;
  private final boolean allowInsecure;

  BearerCredentials(BearerToken token, boolean allowInsecure) {
    this.token = token;
    this.allowInsecure = allowInsecure;
  }

  @Override
  public void applyRequestMetadata(RequestInfo info, Executor executor, MetadataApplier applier) {
    if (info.getSecurityLevel() != SecurityLevel.PRIVACY_AND_INTEGRITY && !allowInsecure) {
      applier.fail(
          Status.UNAUTHENTICATED.withDescription(
              "not sending the bearer token over a"
                  + " connection without TLS (use --tls, or --allow-insecure-token)"));
      return;
    }
    executor.execute(
        () -> {
          try {
            Metadata headers = new Metadata();
            headers.put(AUTHORIZATION, "Bearer " + token.value());
            applier.apply(headers);
          } catch (IOException | RuntimeException e) {
            applier.fail(
                Status.UNAUTHENTICATED.withDescription(
                    "cannot read " + token.describe() + ": " + e.getMessage()));
          }
        });
  }

  @Override
  public String toString() {
    return "BearerCredentials[" + token + "]";
  }
}
