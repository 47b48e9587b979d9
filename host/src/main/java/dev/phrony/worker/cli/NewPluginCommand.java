package dev.phrony.worker.cli;

import dev.phrony.worker.Distribution;
import dev.phrony.worker.HostVersion;
import dev.phrony.worker.UserErrorException;
import dev.phrony.worker.contract.ToolDocument;
import dev.phrony.worker.scaffold.PluginProject;
import dev.phrony.worker.scaffold.ToolContract;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code phrony-worker new-plugin NAME --tool TOOL [--version V] [--dir D]}. */
@Command(
    name = "new-plugin",
    description = {
      "Writes a new plugin project that builds and is served as it is.",
      "",
      "A Maven project on phrony-plugin-parent: a typed handler for --tool with records for "
          + "its arguments and result, its input schema, its services file, a test through "
          + "the worker's own call pipeline and a README. 'mvn package' lays it out in "
          + "target/plugin/NAME/, which 'dev --plugins target/plugin' serves.",
      "",
      "With --from-tool FILE, the tool, version, side-effect class, description and input "
          + "schema come from a kind: Tool document (an agent bundle's tools/ file), and the "
          + "argument record from the schema's properties: check --manifest then finds the "
          + "bundle's binding served by it as it is."
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:the project was written",
      "1:usage error (a name, tool, version or package that cannot be used; a folder that "
          + "is not empty; a Tool document that cannot be read)"
    })
final class NewPluginCommand implements Callable<Integer> {

  // Its own help flag: the standard help mixin's --version clashes with the tool's --version,
  // and picocli then dropped --help as well.
  @Option(
      names = {"-h", "--help"},
      usageHelp = true,
      description = "Show this help and exit.")
  private boolean help;

  // Optional to picocli, checked in call(): a required positional made '--help' fail with
  // "Missing required parameter" instead of printing the help.
  @Parameters(
      index = "0",
      paramLabel = "NAME",
      arity = "0..1",
      description = "The project's folder and artifact id, e.g. greeting.")
  private String name;

  @Option(
      names = "--tool",
      paramLabel = "TOOL",
      description = "The tool it serves, as agent manifests bind it, e.g. greet.say-hello.")
  private String tool;

  @Option(
      names = "--version",
      paramLabel = "VERSION",
      defaultValue = "1.0.0",
      description =
          "The tool's version (default: ${DEFAULT-VALUE}); 'default' for "
              + "unversioned bindings.")
  private String version;

  @Option(
      names = "--from-tool",
      paramLabel = "FILE",
      description =
          "A kind: Tool document (e.g. tools/payments.process-payment.yaml) to make the project "
              + "from; replaces --tool and --version, and NAME defaults to its metadata.name.")
  private Path fromTool;

  @Option(
      names = "--package",
      paramLabel = "PACKAGE",
      description = "The handler's Java package (default: com.example.NAME).")
  private String javaPackage;

  @Option(
      names = "--dir",
      paramLabel = "DIR",
      description = "Where the project goes (default: ./NAME); it must not exist, or be empty.")
  private Path dir;

  @CommandLine.Spec private CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    Optional<ToolContract> contract = Optional.empty();
    if (fromTool != null) {
      if (tool != null || spec.commandLine().getParseResult().hasMatchedOption("--version")) {
        throw new CommandLine.ParameterException(
            spec.commandLine(),
            "--from-tool takes the tool and its version from the document: leave out --tool and"
                + " --version");
      }
      ToolDocument.Loaded loaded = ToolDocument.load(fromTool);
      ToolDocument d = loaded.document();
      tool = d.id();
      version =
          d.version()
              .orElseThrow(
                  () ->
                      new UserErrorException(
                          "Tool manifest "
                              + fromTool
                              + " has no metadata.version: give the tool a version"));
      if (name == null) {
        name = d.name().toLowerCase(java.util.Locale.ROOT).replaceAll("[^a-z0-9-]", "-");
      }
      contract = Optional.of(ToolContract.of(loaded));
    }
    if (name == null || tool == null) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "Missing required "
              + (name == null ? "parameter: 'NAME'" : "option: '--tool=TOOL'")
              + ": phrony-worker new-plugin NAME --tool TOOL, e.g. new-plugin greeting --tool"
              + " greet.say-hello (or new-plugin --from-tool tools/TOOL.yaml)");
    }
    PluginProject project;
    try {
      project =
          new PluginProject(
              name,
              tool,
              version,
              javaPackage != null ? javaPackage : PluginProject.defaultPackage(name),
              HostVersion.get(),
              contract);
    } catch (IllegalArgumentException e) {
      throw new UserErrorException(e.getMessage(), e);
    }
    Path target = dir != null ? dir : Path.of(name);
    List<Path> files;
    try {
      files = project.writeTo(target);
    } catch (IllegalArgumentException e) {
      throw new UserErrorException(e.getMessage(), e);
    } catch (IOException e) {
      throw new UncheckedIOException("could not write the project into " + target, e);
    }
    PrintWriter out = spec.commandLine().getOut();
    out.println(
        "wrote "
            + target
            + " ("
            + project.tool()
            + "@"
            + project.version()
            + ", "
            + project.javaPackage()
            + "."
            + project.className()
            + "):");
    files.forEach(f -> out.println("  " + f));
    out.println();
    // Each line on its own, from any folder: absolute paths, and the launcher by its path
    // (phrony-worker is rarely on the PATH).
    Path abs = target.toAbsolutePath().normalize();
    String home = System.getProperty(Distribution.HOME_PROPERTY);
    String launcher =
        home == null || home.isBlank()
            ? "phrony-worker"
            : Path.of(home.strip(), "bin", "phrony-worker").toString();
    out.println("next:");
    out.println(
        "  (cd "
            + abs
            + " && mvn package)   # builds, tests, lays it out in"
            + " target/plugin/"
            + project.name()
            + "/");
    out.println(
        "  "
            + launcher
            + " dev --plugins "
            + abs.resolve("target/plugin")
            + "   # reloads after each mvn package");
    out.println(
        "  "
            + launcher
            + " call "
            + project.tool()
            + "@"
            + project.version()
            + " '"
            + project.exampleArgs().replace("'", "'\\''")
            + "'");
    out.println(
        "(the plugin kit must be installed once: ./mvnw -B install -pl plugin-parent"
            + " -am -DskipTests in a phrony-worker checkout)");
    out.flush();
    return ExitCodes.OK;
  }
}
