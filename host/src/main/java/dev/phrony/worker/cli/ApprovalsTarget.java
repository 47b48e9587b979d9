package dev.phrony.worker.cli;

import dev.phrony.worker.dev.ApprovalsClient;
import dev.phrony.worker.dev.ControlClient;
import java.util.Optional;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Where {@code approvals}, {@code approve} and {@code deny} find the approvals: the runtime's
 * approval RPCs on a runtime address (dev's, or a Phrony runtime's), unless dev's control API is
 * named ({@code --control}, {@code $PHRONY_WORKER_CONTROL}), which they spoke before dev served the
 * runtime's RPCs.
 */
final class ApprovalsTarget {
  @Option(
      names = "--runtime",
      paramLabel = "ADDR",
      description =
          "Runtime address whose approval RPCs to use (dev's, or a Phrony runtime's). Default: $"
              + ApprovalsClient.ENV_RUNTIME
              + ", else "
              + ApprovalsClient.DEFAULT_RUNTIME
              + ".")
  private String runtime;

  @Mixin private ControlOption control;

  /** dev's control API, when it is named and no runtime address is. */
  Optional<ControlClient> controlApi() {
    if (runtime != null) {
      return Optional.empty();
    }
    return control.named();
  }

  /** A client of the runtime's approval RPCs. */
  ApprovalsClient rpc() {
    if (runtime != null) {
      return ApprovalsClient.of(runtime);
    }
    String env = System.getenv(ApprovalsClient.ENV_RUNTIME);
    return ApprovalsClient.of(
        env != null && !env.isBlank() ? env : ApprovalsClient.DEFAULT_RUNTIME);
  }
}
