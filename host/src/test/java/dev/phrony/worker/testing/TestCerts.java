package dev.phrony.worker.testing;

import java.io.IOException;
import java.math.BigInteger;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Date;
import java.util.concurrent.atomic.AtomicLong;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A private CA and the certificates a TLS test needs, made in the test and written as PEM files: a
 * server certificate for {@code 127.0.0.1} and {@code localhost}, and client certificates for
 * mutual TLS. BouncyCastle issues them: the JDK can verify certificates but has no public API to
 * make one.
 */
public final class TestCerts {
  /** Seeded from the time so that serials differ across runs too (a certificate's identity). */
  private static final AtomicLong SERIAL = new AtomicLong(System.currentTimeMillis());

  /** One certificate and its key, as PEM files. */
  public record Pem(Path cert, Path key) {}

  private final Path dir;
  private final KeyPair caKeys;
  private final X509Certificate ca;
  private final Path caPem;

  private TestCerts(Path dir, KeyPair caKeys, X509Certificate ca, Path caPem) {
    this.dir = dir;
    this.caKeys = caKeys;
    this.ca = ca;
    this.caPem = caPem;
  }

  /** A new CA named {@code name}, its files in {@code dir}. */
  public static TestCerts newCa(Path dir, String name) throws Exception {
    Files.createDirectories(dir);
    KeyPair keys = keyPair();
    X500Name subject = new X500Name("CN=" + name);
    X509v3CertificateBuilder b = builder(subject, subject, keys);
    b.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
    b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
    X509Certificate cert = sign(b, keys.getPrivate());
    Path pem = writeCert(dir.resolve(name + "-ca.pem"), cert);
    return new TestCerts(dir, keys, cert, pem);
  }

  /** The CA certificate (what a peer trusts). */
  public Path caPem() {
    return caPem;
  }

  /** A server certificate for 127.0.0.1 and localhost. */
  public Pem server(String name) throws Exception {
    return issue(name, KeyPurposeId.id_kp_serverAuth, true);
  }

  /** A client certificate for mutual TLS. */
  public Pem client(String name) throws Exception {
    return issue(name, KeyPurposeId.id_kp_clientAuth, false);
  }

  private Pem issue(String name, KeyPurposeId purpose, boolean serverNames) throws Exception {
    KeyPair keys = keyPair();
    X509v3CertificateBuilder b =
        builder(
            new X500Name(ca.getSubjectX500Principal().getName()), new X500Name("CN=" + name), keys);
    b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
    b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature));
    b.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(purpose));
    if (serverNames) {
      b.addExtension(
          Extension.subjectAlternativeName,
          false,
          new GeneralNames(
              new GeneralName[] {
                new GeneralName(
                    GeneralName.iPAddress, InetAddress.getByName("127.0.0.1").getHostAddress()),
                new GeneralName(GeneralName.dNSName, "localhost")
              }));
    }
    X509Certificate cert = sign(b, caKeys.getPrivate());
    return new Pem(
        writeCert(dir.resolve(name + ".pem"), cert),
        writeKey(dir.resolve(name + "-key.pem"), keys.getPrivate()));
  }

  private static X509v3CertificateBuilder builder(X500Name issuer, X500Name subject, KeyPair keys) {
    Instant now = Instant.now(); // a certificate's validity window is checked on real time
    return new JcaX509v3CertificateBuilder(
        issuer,
        BigInteger.valueOf(SERIAL.incrementAndGet()),
        Date.from(now.minus(Duration.ofHours(1))),
        Date.from(now.plus(Duration.ofDays(1))),
        subject,
        keys.getPublic());
  }

  private static X509Certificate sign(X509v3CertificateBuilder b, PrivateKey signer)
      throws OperatorCreationException, GeneralSecurityException {
    return new JcaX509CertificateConverter()
        .getCertificate(b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(signer)));
  }

  private static KeyPair keyPair() throws GeneralSecurityException {
    KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
    g.initialize(new ECGenParameterSpec("secp256r1"));
    return g.generateKeyPair();
  }

  private static Path writeCert(Path file, X509Certificate cert) throws Exception {
    return Files.writeString(file, pem("CERTIFICATE", cert.getEncoded()));
  }

  /** PKCS#8, as gRPC reads it. */
  private static Path writeKey(Path file, PrivateKey key) throws IOException {
    return Files.writeString(file, pem("PRIVATE KEY", key.getEncoded()));
  }

  private static String pem(String type, byte[] der) {
    return "-----BEGIN "
        + type
        + "-----\n"
        + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
        + "\n-----END "
        + type
        + "-----\n";
  }
}
