package dev.phrony.worker.cli;

import dev.phrony.worker.dev.ControlClient;
import picocli.CommandLine.Option;

/**
 * {@code --control URL}: where a running {@code phrony-worker dev} serves its control API, for
 * every command that talks to it ({@code @Mixin ControlOption control;}).
 */
final class ControlOption {
  @Option(
      names = "--control",
      paramLabel = "URL",
      description =
          "Control address of 'phrony-worker dev'. Default: $"
              + ControlClient.ENV_CONTROL
              + ", else "
              + ControlClient.DEFAULT_URL
              + ".")
  private String control;

  /** Whether the address is given, by {@code --control} or {@code $PHRONY_WORKER_CONTROL}. */
  boolean given() {
    return named().isPresent();
  }

  /** Whether {@code --control} is on the command line. */
  boolean flagGiven() {
    return control != null;
  }

  /** A client for the address given or {@code $PHRONY_WORKER_CONTROL}, if either names one. */
  java.util.Optional<ControlClient> named() {
    if (control != null) {
      return java.util.Optional.of(ControlClient.of(control));
    }
    String env = System.getenv(ControlClient.ENV_CONTROL);
    return env != null && !env.isBlank()
        ? java.util.Optional.of(ControlClient.of(env))
        : java.util.Optional.empty();
  }

  /** A client for the address given, else {@code $PHRONY_WORKER_CONTROL}, else the default. */
  ControlClient client() {
    if (control != null) {
      return ControlClient.of(control);
    }
    String env = System.getenv(ControlClient.ENV_CONTROL);
    return ControlClient.of(env != null && !env.isBlank() ? env : ControlClient.DEFAULT_URL);
  }
}
