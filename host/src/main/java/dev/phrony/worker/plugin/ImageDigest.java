package dev.phrony.worker.plugin;

import dev.phrony.worker.HostVersion;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Collection;
import java.util.HexFormat;

/**
 * The default {@code image_digest} a worker registers with: what code this worker runs, when the
 * deployment does not name a container image digest.
 *
 * <p>It is {@code sha256:} followed by the lower-case hex SHA-256 of this UTF-8 text:
 *
 * <pre>
 * host=&lt;host version&gt;\n
 * &lt;sha256 hex of a plugin jar&gt;\n        (one line per jar of every plugin found,
 * ...                                    sorted ascending, duplicates kept)
 * </pre>
 *
 * <p>Only jar contents count, not their paths, so renaming or moving a plugin keeps the digest,
 * while changing any byte of any jar, adding or removing one, or upgrading the host changes it.
 * Plugins that failed to load count too: the digest describes what is deployed.
 */
public final class ImageDigest {
  private ImageDigest() {}

  /** The digest of this host's version and {@code plugins}. */
  public static String of(Collection<PluginSource> plugins) {
    return of(HostVersion.get(), plugins);
  }

  /** The digest of {@code hostVersion} and the jars of {@code plugins}. */
  public static String of(String hostVersion, Collection<PluginSource> plugins) {
    StringBuilder canonical = new StringBuilder("host=").append(hostVersion).append('\n');
    plugins.stream()
        .flatMap(p -> p.jars().stream())
        .map(PluginSource.Jar::sha256)
        .sorted()
        .forEach(sha -> canonical.append(sha).append('\n'));
    return "sha256:" + sha256Hex(canonical.toString().getBytes(StandardCharsets.UTF_8));
  }

  static String sha256Hex(byte[] bytes) {
    return HexFormat.of().formatHex(sha256().digest(bytes));
  }

  static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }
}
