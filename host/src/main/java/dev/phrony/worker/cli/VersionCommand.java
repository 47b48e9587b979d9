package dev.phrony.worker.cli;

import dev.phrony.worker.HostVersion;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code phrony-worker version}. */
@Command(
    name = "version",
    mixinStandardHelpOptions = true,
    description = "Prints the host version.")
final class VersionCommand implements Callable<Integer> {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    spec.commandLine().getOut().println("phrony-worker " + HostVersion.get());
    return 0;
  }

  /** Supplies {@code --version} on every command. */
  static final class Provider implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      return new String[] {"phrony-worker " + HostVersion.get()};
    }
  }
}
