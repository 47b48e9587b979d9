package dev.phrony.worker.cli;

import dev.phrony.worker.outbox.Durability;
import picocli.CommandLine;

/**
 * Converts {@code --durability writes|all|none} (case-insensitive): {@code @Option(names =
 * "--durability", converter = DurabilityConverter.class, completionCandidates =
 * DurabilityConverter.Candidates.class)}.
 */
public final class DurabilityConverter implements CommandLine.ITypeConverter<Durability> {
  @Override
  public Durability convert(String value) {
    try {
      return Durability.fromFlag(value);
    } catch (IllegalArgumentException e) {
      throw new CommandLine.TypeConversionException(e.getMessage());
    }
  }

  /** {@code writes, all, none}, for help and completion. */
  public static final class Candidates implements Iterable<String> {
    @Override
    public java.util.Iterator<String> iterator() {
      return java.util.Arrays.stream(Durability.values()).map(Durability::flagName).iterator();
    }
  }
}
