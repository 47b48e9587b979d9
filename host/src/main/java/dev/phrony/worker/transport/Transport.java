package dev.phrony.worker.transport;

import io.grpc.CallCredentials;
import io.grpc.ChannelCredentials;
import io.grpc.InsecureChannelCredentials;
import io.grpc.TlsChannelCredentials;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

/**
 * How the worker reaches the runtime: plaintext (the runtime's own default), or TLS trusting the
 * system's CAs or a private one, optionally with a client certificate (mutual TLS); and an optional
 * bearer token on the Work stream. Immutable; validated when built.
 *
 * @param tls whether to use TLS
 * @param trustedCa PEM file of the CA(s) to trust instead of the system's
 * @param clientCert PEM certificate chain to present (mutual TLS); needs {@code clientKey}
 * @param clientKey PEM PKCS#8 private key of {@code clientCert}
 * @param token bearer token for the Work stream
 * @param allowInsecureToken send the token without TLS too (refused otherwise)
 */
public record Transport(
    boolean tls,
    Optional<Path> trustedCa,
    Optional<Path> clientCert,
    Optional<Path> clientKey,
    Optional<BearerToken> token,
    boolean allowInsecureToken) {

  public Transport {
    Objects.requireNonNull(trustedCa, "trustedCa");
    Objects.requireNonNull(clientCert, "clientCert");
    Objects.requireNonNull(clientKey, "clientKey");
    Objects.requireNonNull(token, "token");
    if (!tls && (trustedCa.isPresent() || clientCert.isPresent() || clientKey.isPresent())) {
      throw new IllegalArgumentException("a CA, client certificate or key needs TLS");
    }
    if (clientCert.isPresent() != clientKey.isPresent()) {
      throw new IllegalArgumentException(
          clientCert.isPresent()
              ? "a client certificate needs its private key"
              : "a client key needs its certificate");
    }
    if (token.isPresent() && !tls && !allowInsecureToken) {
      throw new IllegalArgumentException("a bearer token is only sent over TLS");
    }
  }

  /** No TLS, no token. */
  public static Transport plaintext() {
    return new Transport(
        false, Optional.empty(), Optional.empty(), Optional.empty(), Optional.empty(), false);
  }

  /** The channel's credentials; reads the PEM files. */
  public ChannelCredentials channelCredentials() throws IOException {
    if (!tls) {
      return InsecureChannelCredentials.create();
    }
    TlsChannelCredentials.Builder b = TlsChannelCredentials.newBuilder();
    if (trustedCa.isPresent()) {
      b.trustManager(trustedCa.get().toFile());
    }
    if (clientCert.isPresent()) {
      b.keyManager(clientCert.get().toFile(), clientKey.orElseThrow().toFile());
    }
    return b.build();
  }

  /** The Work stream's call credentials: the bearer token, if any. */
  public Optional<CallCredentials> callCredentials() {
    return token.map(t -> new BearerCredentials(t, allowInsecureToken));
  }
}
