package dev.phrony.worker.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class PhronyWorkerCommandTest {

  @Test
  void eachSubcommandIsListedUnderItsOwnName() {
    PhronyWorkerCommand.SUBCOMMANDS.forEach(
        (name, type) ->
            assertThat(type.getAnnotation(CommandLine.Command.class).name())
                .as("%s", type)
                .isEqualTo(name));
  }

  @Test
  void aNamedCommandBuildsOnlyItself() {
    assertThat(subcommands("run", "--plugins", "x")).containsOnlyKeys("run");
    assertThat(subcommands("version")).containsOnlyKeys("version");
    // list-handlers reads run's settings (its plugins folder and handler settings)
    assertThat(subcommands("list-handlers")).containsOnlyKeys("list-handlers", "run");
  }

  @Test
  void anythingElseBuildsAllOfThem() {
    for (String[] args : new String[][] {{}, {"--help"}, {"help", "run"}, {"runn"}}) {
      assertThat(subcommands(args).keySet())
          .as(String.join(" ", args))
          .containsExactlyElementsOf(PhronyWorkerCommand.SUBCOMMANDS.keySet());
    }
  }

  @Test
  void helpAndTyposStillSeeEveryCommand() {
    CliRun help = CliRun.run("--help");
    assertThat(help.exit()).isZero();
    PhronyWorkerCommand.SUBCOMMANDS
        .keySet()
        .forEach(name -> assertThat(help.out()).contains("  " + name));
    CliRun typo = CliRun.run("list-handler");
    assertThat(typo.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(typo.err()).contains("'list-handler'");
    assertThat(CliRun.run("help", "run").out()).contains("--plugins");
  }

  @Test
  void typosOfCommandsAndFlagsSuggestTheCloseMatch() {
    assertUsage(
        CliRun.run("lsit-handlers"),
        "phrony-worker: 'lsit-handlers' is not a command; did you mean 'list-handlers'?"
            + " (see 'phrony-worker --help')");
    assertUsage(
        CliRun.run("run", "--plugns", "./plugins"),
        "phrony-worker run: unknown option '--plugns'; did you mean '--plugins'?"
            + " (see 'phrony-worker run --help')");
    assertUsage(
        CliRun.run("list-handlers", "--formt=json"),
        "phrony-worker list-handlers: unknown option '--formt'; did you mean '--format'?"
            + " (see 'phrony-worker list-handlers --help')");
    assertUsage(
        CliRun.run("outbox", "lsit"),
        "phrony-worker outbox: 'lsit' is not a command; did you mean 'list'?"
            + " (see 'phrony-worker outbox --help')");
    assertUsage(
        CliRun.run("dev", "--watch-plugin", "off"),
        "phrony-worker dev: unknown option '--watch-plugin'; did you mean '--watch-plugins'?"
            + " (see 'phrony-worker dev --help')");
  }

  @Test
  void anUnknownWordWithNothingCloseSaysSoWithoutAGuess() {
    CliRun far = CliRun.run("run", "--colour");
    assertThat(far.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(far.err())
        .isEqualTo(
            "phrony-worker run: Unknown option: '--colour' (see 'phrony-worker run --help')\n");
    assertThat(CliRun.run("frobnicate").err()).doesNotContain("did you mean");
  }

  private static void assertUsage(CliRun r, String line) {
    assertThat(r.exit()).as(r.err()).isEqualTo(ExitCodes.USAGE);
    assertThat(r.out()).isEmpty();
    assertThat(r.err()).isEqualTo(line + "\n");
  }

  private static Map<String, CommandLine> subcommands(String... args) {
    return PhronyWorkerCommand.newCommandLine(args).getSubcommands();
  }

  @Test
  void everyFlagAndParameterOfEveryCommandIsDescribedInItsHelp() {
    java.util.List<CommandLine> commands = new java.util.ArrayList<>();
    java.util.Deque<CommandLine> todo =
        new java.util.ArrayDeque<>(PhronyWorkerCommand.newCommandLine().getSubcommands().values());
    while (!todo.isEmpty()) {
      CommandLine c = todo.pop();
      if (!c.getCommandName().equals("help")) {
        commands.add(c);
        todo.addAll(c.getSubcommands().values());
      }
    }
    assertThat(commands)
        .extracting(CommandLine::getCommandName)
        .contains("run", "list", "show", "purge");
    for (CommandLine c : commands) {
      CommandLine.Model.CommandSpec spec = c.getCommandSpec();
      String[] path = spec.qualifiedName(" ").split(" ");
      String[] args =
          java.util.Arrays.copyOf(java.util.Arrays.copyOfRange(path, 1, path.length), path.length);
      args[path.length - 1] = "--help";
      String help = CliRun.run(args).out();
      for (CommandLine.Model.OptionSpec o : spec.options()) {
        assertThat(String.join(" ", o.description()))
            .as("%s %s", spec.qualifiedName(), o.longestName())
            .isNotBlank();
        assertThat(o.hidden()).as("%s %s hidden", spec.qualifiedName(), o.longestName()).isFalse();
        assertThat(help).as("%s --help", spec.qualifiedName()).contains(o.longestName());
      }
      for (CommandLine.Model.PositionalParamSpec p : spec.positionalParameters()) {
        assertThat(String.join(" ", p.description()))
            .as("%s %s", spec.qualifiedName(), p.paramLabel())
            .isNotBlank();
        assertThat(help).as("%s --help", spec.qualifiedName()).contains(p.paramLabel());
      }
    }
  }

  @Test
  void everyCommandAnswersHelpWithItsFlagsAndTheTopLevelListsEveryExitCode() {
    for (String name : PhronyWorkerCommand.newCommandLine().getSubcommands().keySet()) {
      for (String flag : new String[] {"--help", "-h"}) {
        CliRun r = CliRun.run(name, flag);
        assertThat(r.exit()).as("%s %s: %s", name, flag, r.err()).isZero();
        assertThat(r.out()).as("%s %s", name, flag).contains("Usage:");
      }
    }
    String top = CliRun.run("--help").out();
    for (String code : new String[] {"0", "1", "3", "4", "5", "6", "8", "9", "70"}) {
      assertThat(top).as("exit code %s", code).containsPattern("(?m)^\\s+" + code + "\\s");
    }
  }
}
