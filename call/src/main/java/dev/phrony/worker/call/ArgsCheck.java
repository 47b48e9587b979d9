package dev.phrony.worker.call;

import java.nio.ByteBuffer;

/**
 * A check of a call's arguments before its handler may see them (a handler's input schema, compiled
 * once when its plugin is loaded). Thread-safe.
 */
@FunctionalInterface
public interface ArgsCheck {

  /** Accepts any well-formed JSON. */
  ArgsCheck NONE = args -> null;

  /**
   * The first violation in words, naming the JSON pointer and the rule (e.g. {@code /city: expected
   * string, got integer}); null when the arguments fit. Called only with well-formed JSON.
   */
  String violation(ByteBuffer args);
}
