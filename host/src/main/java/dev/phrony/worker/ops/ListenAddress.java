package dev.phrony.worker.ops;

import java.net.InetSocketAddress;
import java.util.Locale;
import java.util.Optional;

/**
 * Where the probe and metrics endpoint listens: {@code HOST:PORT} ({@code [::1]:9464} for IPv6;
 * port 0 picks a free one), or {@code none} for no endpoint.
 */
public record ListenAddress(String host, int port) {
  public static final String NONE = "none";

  public ListenAddress {
    if (host == null || host.isBlank()) {
      throw new IllegalArgumentException("a host is required");
    }
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException("port " + port + " is out of range (0-65535)");
    }
  }

  /**
   * Parses {@code HOST:PORT} or {@code none}.
   *
   * @return empty for {@code none}
   * @throws IllegalArgumentException saying what is wrong
   */
  public static Optional<ListenAddress> parse(String text) {
    String s = text == null ? "" : text.strip();
    if (s.toLowerCase(Locale.ROOT).equals(NONE)) {
      return Optional.empty();
    }
    int colon = s.lastIndexOf(':');
    if (colon <= 0 || colon == s.length() - 1) {
      throw new IllegalArgumentException(
          "'"
              + text
              + "' is not HOST:PORT (e.g. 127.0.0.1:9464,"
              + " 0.0.0.0:9464, [::1]:9464) or none");
    }
    String host = s.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    int port;
    try {
      port = Integer.parseInt(s.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "'" + text + "' has no valid port: use HOST:PORT, e.g." + " 127.0.0.1:9464, or none");
    }
    return Optional.of(new ListenAddress(host, port));
  }

  public InetSocketAddress socketAddress() {
    return new InetSocketAddress(host, port);
  }

  @Override
  public String toString() {
    return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
  }
}
