package dev.phrony.worker.cli;

import dev.phrony.worker.config.LayeredDefaults;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * {@code --config FILE}, for the commands whose settings also come from {@code worker.yaml}. Read
 * by {@link LayeredDefaults}, which finds this option by name.
 */
final class ConfigOption {
  @Option(
      names = LayeredDefaults.CONFIG_OPTION,
      paramLabel = "FILE",
      description =
          "Settings file (default: $"
              + LayeredDefaults.CONFIG_ENV
              + ", else conf/worker.yaml of this distribution, which may be missing). "
              + "Flags beat environment variables beat this file beat built-in defaults.")
  Path config;
}
