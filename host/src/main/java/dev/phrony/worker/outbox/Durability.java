package dev.phrony.worker.outbox;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * Which results the outbox makes durable ({@code --durability}). Results that are not durable stay
 * in memory: they survive reconnects, not a crash.
 */
public enum Durability {
  /**
   * Results of tools that write: {@code idempotent_write}, {@code non_idempotent_write}, {@code
   * irreversible_action}.
   */
  WRITES,
  /** Every result. */
  ALL,
  /** None: memory only, no intents. */
  NONE;

  /**
   * Whether a result of a tool of this side-effect class (wire name; may be empty) goes to disk.
   */
  public boolean isDurable(String sideEffectClassWireName) {
    return switch (this) {
      case ALL -> true;
      case NONE -> false;
      case WRITES ->
          "idempotent_write".equals(sideEffectClassWireName)
              || needsIntentClass(sideEffectClassWireName);
    };
  }

  /**
   * Whether a call of this class gets a durable intent before its handler runs: a {@code
   * non_idempotent_write} or {@code irreversible_action}, unless durability is {@code none}.
   */
  public boolean needsIntent(String sideEffectClassWireName) {
    return this != NONE && needsIntentClass(sideEffectClassWireName);
  }

  private static boolean needsIntentClass(String wire) {
    return "non_idempotent_write".equals(wire) || "irreversible_action".equals(wire);
  }

  /** The flag spelling: {@code writes}, {@code all}, {@code none}. */
  public String flagName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * Parses the flag spelling (case-insensitive).
   *
   * @throws IllegalArgumentException naming the accepted values
   */
  public static Durability fromFlag(String text) {
    for (Durability d : values()) {
      if (d.flagName().equalsIgnoreCase(text == null ? "" : text.strip())) {
        return d;
      }
    }
    throw new IllegalArgumentException(
        "unknown durability '"
            + text
            + "' (expected one of "
            + Arrays.stream(values()).map(Durability::flagName).collect(Collectors.joining(", "))
            + ")");
  }

  @Override
  public String toString() {
    return flagName();
  }
}
