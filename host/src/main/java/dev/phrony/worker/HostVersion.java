package dev.phrony.worker;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/** The host's version, stamped into the jar at build time. */
public final class HostVersion {
  private static final String VERSION = load();

  private HostVersion() {}

  public static String get() {
    return VERSION;
  }

  private static String load() {
    try (InputStream in = HostVersion.class.getResourceAsStream("version.properties")) {
      if (in == null) {
        return "unknown";
      }
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("version", "unknown");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
