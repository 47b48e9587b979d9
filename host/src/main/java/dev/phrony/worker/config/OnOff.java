package dev.phrony.worker.config;

import java.util.Locale;
import java.util.Optional;

/** A switch setting's text: {@code on} or {@code off} (and, as YAML reads them, true or false). */
public final class OnOff {
  private OnOff() {}

  /** The switch {@code text} names, or empty when it names none. */
  public static Optional<Boolean> parse(String text) {
    return switch (text == null ? "" : text.strip().toLowerCase(Locale.ROOT)) {
      case "on", "true" -> Optional.of(true);
      case "off", "false" -> Optional.of(false);
      default -> Optional.empty();
    };
  }
}
