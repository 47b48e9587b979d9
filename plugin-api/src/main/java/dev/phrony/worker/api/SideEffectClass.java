package dev.phrony.worker.api;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * What running a tool does to the world. The runtime uses it to decide whether a call whose outcome
 * is unknown may be dispatched again; the host uses it to decide which results are kept durably.
 * Declare the strongest class that applies.
 */
public enum SideEffectClass {
  /** Reads only; running it twice is harmless. */
  READ_ONLY("read_only"),
  /** Writes, but a repeat with the same arguments leaves the same state. */
  IDEMPOTENT_WRITE("idempotent_write"),
  /** Writes that must not be repeated (a payment, a sent message). */
  NON_IDEMPOTENT_WRITE("non_idempotent_write"),
  /** Cannot be undone at all (deleting data, wiring money out). */
  IRREVERSIBLE_ACTION("irreversible_action");

  private final String wireName;

  SideEffectClass(String wireName) {
    this.wireName = wireName;
  }

  /** The spelling used on the wire and in agent manifests, e.g. {@code read_only}. */
  public String wireName() {
    return wireName;
  }

  /**
   * Parses the wire spelling.
   *
   * @throws IllegalArgumentException naming the accepted values when {@code name} is not one
   */
  public static SideEffectClass fromWire(String name) {
    for (SideEffectClass c : values()) {
      if (c.wireName.equals(name)) {
        return c;
      }
    }
    throw new IllegalArgumentException(
        "unknown side-effect class '"
            + name
            + "' (expected one of "
            + Arrays.stream(values())
                .map(SideEffectClass::wireName)
                .collect(Collectors.joining(", "))
            + ")");
  }

  @Override
  public String toString() {
    return wireName;
  }
}
