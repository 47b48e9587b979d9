package dev.phrony.worker.cli;

import picocli.CommandLine.Option;

/**
 * {@code --format table|json}, for every command that prints a report ({@code @Mixin FormatOption
 * format;}).
 */
final class FormatOption {
  enum Format {
    table,
    json
  }

  @Option(
      names = "--format",
      paramLabel = "FORMAT",
      defaultValue = "table",
      description = "Output format: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
  private Format format;

  /** True for {@code --format json}; the table otherwise. */
  boolean json() {
    return format == Format.json;
  }
}
