package dev.phrony.worker.cli;

import dev.phrony.worker.UserErrorException;
import dev.phrony.worker.dev.CallRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import picocli.CommandLine;

/** Tool arguments given on the command line or read from {@code --args-file} ({@code -}: stdin). */
final class ArgsFile {
  private ArgsFile() {}

  /**
   * The arguments given inline (as {@code inlineName}) or in {@code file}, checked to be one JSON
   * value and compacted; null when neither is given.
   *
   * @throws CommandLine.ParameterException when both are given
   */
  static String choose(
      CommandLine.Model.CommandSpec spec, String inline, String inlineName, Path file) {
    if (inline != null && file != null) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "give the arguments as " + inlineName + " or with --args-file, not both");
    }
    return inline != null
        ? CallRequest.checkArgs(inline, inlineName)
        : file != null ? CallRequest.checkArgs(read(file), "--args-file " + file) : null;
  }

  /** The text of {@code file}; a user error naming {@code --args-file} when it cannot be read. */
  private static String read(Path file) {
    try {
      if (file.toString().equals("-")) {
        return new String(System.in.readAllBytes(), StandardCharsets.UTF_8);
      }
      return Files.readString(file, StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      throw new UserErrorException("--args-file " + file + " does not exist", e);
    } catch (IOException e) {
      throw new UserErrorException("--args-file " + file + " cannot be read: " + e.getMessage(), e);
    }
  }
}
