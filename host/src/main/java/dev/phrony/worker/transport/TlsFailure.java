package dev.phrony.worker.transport;

import java.security.cert.CertPathBuilderException;
import java.security.cert.CertPathValidatorException;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateNotYetValidException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import javax.net.ssl.SSLException;

/**
 * What went wrong in a TLS handshake, in words an operator can act on: gRPC reports it as {@code
 * UNAVAILABLE: io exception} with the certificate error buried in the cause chain.
 *
 * @param problem what is wrong, naming the setting that fixes it
 * @param chain the cause chain, {@code Class: message} per link
 */
public record TlsFailure(String problem, String chain) {

  /** The TLS failure in {@code error}'s cause chain, if there is one. */
  public static Optional<TlsFailure> of(Throwable error) {
    List<Throwable> causes = new ArrayList<>();
    for (Throwable t = error; t != null && causes.size() < 16; t = t.getCause()) {
      causes.add(t);
    }
    if (causes.stream()
        .noneMatch(
            t ->
                t instanceof SSLException || t instanceof java.security.GeneralSecurityException)) {
      return Optional.empty();
    }
    StringBuilder chain = new StringBuilder();
    for (Throwable t : causes) {
      if (!chain.isEmpty()) {
        chain.append(" <- ");
      }
      chain.append(t.getClass().getName()).append(": ").append(t.getMessage());
    }
    String all = chain.toString().toLowerCase(Locale.ROOT);
    return Optional.of(new TlsFailure(problem(causes, all), chain.toString()));
  }

  private static String problem(List<Throwable> causes, String all) {
    if (has(causes, CertificateExpiredException.class)) {
      return "a certificate in the runtime's chain has expired: renew it (or check this host's"
          + " clock)";
    }
    if (has(causes, CertificateNotYetValidException.class)) {
      return "a certificate in the runtime's chain is not valid yet: check this host's clock";
    }
    if (all.contains("no subject alternative")
        || all.contains("no name matching")
        || all.contains("hostname") && all.contains("match")) {
      return "the runtime's certificate does not name the host in --runtime: connect by a name"
          + " the certificate holds, or reissue it with that name";
    }
    if (has(causes, CertPathBuilderException.class)
        || has(causes, CertPathValidatorException.class)
        || all.contains("unable to find valid certification path")) {
      return "the runtime's certificate is not signed by a CA this worker trusts: set --tls-ca"
          + " to the PEM of the CA that issued it";
    }
    if (all.contains("certificate_required")
        || all.contains("bad_certificate")
        || all.contains("unknown_ca")
        || all.contains("certificate_unknown")) {
      return "the runtime (or its proxy) refused this worker's client certificate, or wants one:"
          + " set --tls-cert and --tls-key to a certificate from the CA it trusts";
    }
    if (all.contains("not an ssl/tls record")
        || all.contains("unrecognized_name")
        || all.contains("plaintext")) {
      return "the runtime does not speak TLS on that port: drop --tls (and the --tls-* files), or"
          + " point --runtime at its TLS port";
    }
    return "the TLS handshake with the runtime failed: check --tls-ca, --tls-cert and --tls-key";
  }

  private static boolean has(List<Throwable> causes, Class<? extends Throwable> type) {
    return causes.stream().anyMatch(type::isInstance);
  }
}
