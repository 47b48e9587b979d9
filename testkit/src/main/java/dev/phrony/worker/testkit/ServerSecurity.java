package dev.phrony.worker.testkit;

import io.grpc.BindableService;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.TlsServerCredentials;
import io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;

/**
 * What the real runtime does not have but the proxies and meshes in front of it do: TLS, client
 * certificates (mutual TLS) and a bearer token on each call. Off by default, as the runtime is
 * plaintext; see {@link LocalRuntime.Builder#tls}.
 *
 * @param certChain PEM certificate chain served, or null for plaintext
 * @param privateKey PEM PKCS#8 key of {@code certChain}
 * @param clientCa PEM CA that client certificates must chain to, or null to ask for none
 * @param bearerToken the token every Work stream must carry as {@code authorization: Bearer
 *     <token>}, or null
 */
record ServerSecurity(Path certChain, Path privateKey, Path clientCa, String bearerToken) {
  static final ServerSecurity NONE = new ServerSecurity(null, null, null, null);

  static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  ServerSecurity {
    if ((certChain == null) != (privateKey == null)) {
      throw new IllegalArgumentException("TLS needs both a certificate chain and its private key");
    }
    if (clientCa != null && certChain == null) {
      throw new IllegalArgumentException(
          "client certificates (mutual TLS) need TLS: set tls(cert, key)");
    }
  }

  boolean tls() {
    return certChain != null;
  }

  /** A server builder for {@code address}, with TLS when configured. */
  NettyServerBuilder serverBuilder(InetSocketAddress address) {
    if (!tls()) {
      return NettyServerBuilder.forAddress(address);
    }
    try {
      TlsServerCredentials.Builder b =
          TlsServerCredentials.newBuilder().keyManager(certChain.toFile(), privateKey.toFile());
      if (clientCa != null) {
        b.trustManager(clientCa.toFile()).clientAuth(TlsServerCredentials.ClientAuth.REQUIRE);
      }
      return NettyServerBuilder.forAddress(address, b.build());
    } catch (IOException e) {
      throw new UncheckedIOException("LocalRuntime cannot read its TLS files", e);
    }
  }

  /** {@code service}, behind the bearer token check when one is required. */
  ServerServiceDefinition protect(BindableService service) {
    return bearerToken == null
        ? service.bindService()
        : ServerInterceptors.intercept(service, new BearerTokenCheck(bearerToken));
  }

  @Override
  public String toString() {
    return "ServerSecurity[tls="
        + tls()
        + ", mtls="
        + (clientCa != null)
        + ", token="
        + (bearerToken != null ? "<required>" : "none")
        + "]";
  }

  /**
   * Ends a call without the right {@code authorization} header UNAUTHENTICATED, as a proxy would.
   */
  static final class BearerTokenCheck implements ServerInterceptor {
    private final byte[] expected;

    BearerTokenCheck(String token) {
      this.expected = ("Bearer " + token).getBytes(StandardCharsets.US_ASCII);
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
        ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
      String given = headers.get(AUTHORIZATION);
      if (given == null
          || !MessageDigest.isEqual(expected, given.getBytes(StandardCharsets.US_ASCII))) {
        call.close(
            Status.UNAUTHENTICATED.withDescription(
                given == null ? "missing bearer token" : "invalid bearer token"),
            new Metadata());
        return new ServerCall.Listener<>() {};
      }
      return next.startCall(call, headers);
    }
  }
}
