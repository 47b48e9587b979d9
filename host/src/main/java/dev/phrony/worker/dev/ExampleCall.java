package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.JsonNode;
import dev.phrony.worker.SyntaxException;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.plugin.HandlerCatalog;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;

/**
 * The {@code call} command line that {@code dev}'s banner suggests: a handler and arguments that
 * work. Arguments come from the first of the handler's JSON Schema {@code examples}; a handler with
 * one is preferred, then one that requires no arguments ({@code {}}).
 */
record ExampleCall(String key, String args) {

  /** The suggested call for the handlers of {@code catalog}, if it has any. */
  static Optional<ExampleCall> pick(HandlerCatalog catalog) {
    List<HandlerCatalog.Entry> entries = catalog.entries();
    for (HandlerCatalog.Entry e : entries) {
      Optional<String> example =
          schema(e.descriptor())
              .map(s -> s.path("examples").path(0))
              .filter(n -> !n.isMissingNode())
              .map(n -> new String(Json.bytes(n), StandardCharsets.UTF_8));
      if (example.isPresent()) {
        return Optional.of(new ExampleCall(e.key(), example.get()));
      }
    }
    return entries.stream()
        .filter(e -> schema(e.descriptor()).map(s -> s.path("required").isEmpty()).orElse(true))
        .findFirst()
        .or(() -> entries.stream().findFirst())
        .map(e -> new ExampleCall(e.key(), "{}"));
  }

  private static Optional<JsonNode> schema(ToolDescriptor d) {
    try {
      return d.inputSchema().map(Json::parse);
    } catch (SyntaxException e) {
      return Optional.empty(); // the loader refuses such handlers; nothing to suggest from
    }
  }

  /**
   * {@code bin/phrony-worker call KEY 'ARGS'} (the version left out when it is the default, the
   * runtime address given when it is not the default).
   */
  String commandLine(String runtimeTarget) {
    String target =
        key.endsWith("@" + ToolDescriptor.DEFAULT_VERSION)
            ? key.substring(0, key.length() - ToolDescriptor.DEFAULT_VERSION.length() - 1)
            : key;
    return "bin/phrony-worker call "
        + target
        + " "
        + shellQuote(args)
        + (ApprovalsClient.DEFAULT_RUNTIME.equals(runtimeTarget)
            ? ""
            : " --runtime " + runtimeTarget);
  }

  /** Single-quoted for a POSIX shell. */
  static String shellQuote(String s) {
    return "'" + s.replace("'", "'\\''") + "'";
  }
}
