package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The documentation ({@code README.md} and {@code docs/*.md}), checked by running it.
 *
 * <p><b>Runnable blocks.</b> A fenced code block whose info string is {@code sh runnable} is run
 * for real, with {@code bash -e -o pipefail}, and fails this test when it ends with another status
 * than expected. Words after {@code runnable}:
 *
 * <ul>
 *   <li>{@code exit=N}: the status it must end with (default 0), for a block that shows an error;
 *   <li>{@code dev}: it needs {@code phrony-worker dev} running: this test starts one (the bundled
 *       plugins, free ports), sets {@code PHRONY_WORKER_CONTROL} to its control address and puts
 *       that address where the block says {@code 127.0.0.1:7778}, and sets {@code
 *       PHRONY_RUNTIME_ADDR} to its runtime address (where {@code call} and the approval commands
 *       go).
 * </ul>
 *
 * <p>A fenced block with the info string {@code output} right after a runnable one (nothing but
 * blank lines between) is what the block prints: each of its non-blank lines must be a line of the
 * block's output (stdout and stderr together), where {@code …} stands for any text.
 *
 * <p>The blocks of a page run in order, as a reader follows them, in a scratch folder of the page's
 * own that holds the checkout's {@code samples/}. {@code bin/phrony-worker} in a block is the
 * assembled distribution's launcher (a shell function of that name), which is what the checkout's
 * launcher runs once it has built it. Mark a block runnable when it runs here in a few seconds and
 * needs nothing but the distribution; leave it unmarked when it needs a real runtime, a Maven build
 * or minutes.
 *
 * <p>Also: every relative link of these pages reaches an existing file, and its {@code #anchor} a
 * heading of that page; every page of {@code docs/} is linked from the README; and the README's
 * command and exit-code tables list what {@code bin/phrony-worker --help} lists.
 */
class DocsIT {
  private static final Pattern FENCE = Pattern.compile("^(\\s*)(`{3,}|~{3,})(.*)$");
  private static final Pattern LINK =
      Pattern.compile("\\[[^\\]]*]\\(([^)\\s]+)(?:\\s+\"[^\"]*\")?\\)");
  private static final Pattern HEADING = Pattern.compile("^(#{1,6})\\s+(.+?)\\s*#*\\s*$");
  private static final String CONTROL_IN_DOCS = "127.0.0.1:7778";
  private static final Duration BLOCK_DEADLINE = Duration.ofSeconds(60);

  /** A fenced block: its page, the line of its opening fence, info string and text. */
  record Block(Path page, int line, String info, String text, int endLine) {
    List<String> words() {
      return List.of(info.strip().split("\\s+"));
    }

    boolean runnable() {
      List<String> w = words();
      return w.size() >= 2 && w.get(0).equals("sh") && w.get(1).equals("runnable");
    }

    boolean needsDev() {
      return words().contains("dev");
    }

    int expectedExit() {
      return words().stream()
          .filter(w -> w.startsWith("exit="))
          .findFirst()
          .map(w -> Integer.parseInt(w.substring(5)))
          .orElse(0);
    }

    String where() {
      return repo().relativize(page) + ":" + line;
    }
  }

  @TempDir Path tmp;

  private static Path repo() {
    return Path.of(System.getProperty("phrony.repo.dir")).toAbsolutePath().normalize();
  }

  private static List<Path> pages() throws IOException {
    List<Path> pages = new ArrayList<>();
    pages.add(repo().resolve("README.md"));
    try (Stream<Path> docs = Files.list(repo().resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
    }
    return pages;
  }

  @Test
  void every_runnable_block_runs_and_prints_what_follows_it() throws Exception {
    List<String> failures = new ArrayList<>();
    int ran = 0;
    int devPort = DistProcess.freePort();
    String control = "127.0.0.1:" + devPort;
    int runtimePort = DistProcess.freePort();
    DistProcess dev = null;
    try {
      for (Path page : pages()) {
        Path dir =
            Files.createDirectories(tmp.resolve(page.getFileName().toString().replace(".md", "")));
        Files.createSymbolicLink(dir.resolve("samples"), repo().resolve("samples"));
        List<Block> blocks = blocks(page);
        for (int i = 0; i < blocks.size(); i++) {
          Block b = blocks.get(i);
          if (!b.runnable()) {
            continue;
          }
          String script = b.text();
          Map<String, String> env = new LinkedHashMap<>();
          if (b.needsDev()) {
            if (dev == null) {
              dev =
                  DistProcess.start(
                      tmp,
                      Map.of(),
                      "dev",
                      "--port",
                      String.valueOf(runtimePort),
                      "--control-port",
                      String.valueOf(devPort));
              dev.awaitStdout("Ctrl-C stops.", DistProcess.DEADLINE);
            }
            script = script.replace(CONTROL_IN_DOCS, control);
            env.put("PHRONY_WORKER_CONTROL", "http://" + control);
            env.put("PHRONY_RUNTIME_ADDR", "127.0.0.1:" + runtimePort);
          }
          ran++;
          Optional<Block> output =
              i + 1 < blocks.size()
                      && blocks.get(i + 1).info().strip().equals("output")
                      && blankBetween(page, b.endLine(), blocks.get(i + 1).line())
                  ? Optional.of(blocks.get(i + 1))
                  : Optional.empty();
          run(b, script, dir, env, output).ifPresent(failures::add);
        }
      }
      if (dev != null) {
        dev.interrupt();
        DistProcess.Result stopped = dev.awaitExit(DistProcess.DEADLINE);
        assertThat(stopped.exit()).as("dev stopped by Ctrl-C; stderr:%n%s", stopped.err()).isZero();
      }
    } finally {
      if (dev != null) {
        dev.close();
      }
    }
    assertThat(failures).as("runnable blocks that failed").isEmpty();
    assertThat(ran).as("runnable blocks found (a marker lost?)").isGreaterThanOrEqualTo(10);
  }

  /** Runs one block; a failure message naming it, or empty when it did as its marker says. */
  private Optional<String> run(
      Block b, String script, Path dir, Map<String, String> env, Optional<Block> output)
      throws IOException, InterruptedException {
    String prelude = "bin/phrony-worker() { \"$PHRONY_DIST/bin/phrony-worker\" \"$@\"; }\n";
    Path log = Files.createTempFile(tmp, "block", ".txt");
    ProcessBuilder pb =
        new ProcessBuilder("bash", "-e", "-o", "pipefail", "-c", prelude + script)
            .directory(dir.toFile())
            .redirectErrorStream(true)
            .redirectOutput(log.toFile());
    Map<String, String> penv = pb.environment();
    penv.keySet().removeIf(k -> k.startsWith("PHRONY_") || k.startsWith("WORKER_"));
    penv.put("JAVA_HOME", System.getProperty("java.home"));
    penv.put("PHRONY_DIST", DistProcess.distDir().toAbsolutePath().toString());
    penv.putAll(env);
    Process p = pb.start();
    if (!p.waitFor(BLOCK_DEADLINE.toMillis(), TimeUnit.MILLISECONDS)) {
      p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      return Optional.of(
          b.where()
              + ": did not end within "
              + BLOCK_DEADLINE
              + ":\n"
              + script
              + "\noutput:\n"
              + Files.readString(log));
    }
    String out = Files.readString(log, StandardCharsets.UTF_8);
    if (p.exitValue() != b.expectedExit()) {
      return Optional.of(
          b.where()
              + ": exit "
              + p.exitValue()
              + ", expected "
              + b.expectedExit()
              + ":\n"
              + script
              + "\noutput:\n"
              + out);
    }
    if (output.isPresent()) {
      List<String> actual = out.lines().map(String::stripTrailing).toList();
      List<String> missing =
          output
              .get()
              .text()
              .lines()
              .filter(l -> !l.isBlank())
              .filter(l -> actual.stream().noneMatch(a -> lineMatches(l.stripTrailing(), a)))
              .toList();
      if (!missing.isEmpty()) {
        return Optional.of(
            b.where()
                + ": the output shown at "
                + output.get().where()
                + " has lines it does not print:\n  "
                + String.join("\n  ", missing)
                + "\nit printed:\n"
                + out);
      }
    }
    return Optional.empty();
  }

  /** Whether {@code actual} is {@code shown}, where {@code …} in {@code shown} is any text. */
  static boolean lineMatches(String shown, String actual) {
    String regex =
        Stream.of(shown.split("…", -1)).map(Pattern::quote).collect(Collectors.joining(".*"));
    return actual.matches(regex);
  }

  @Test
  void the_output_wildcard_matches_any_text_and_nothing_else() {
    assertThat(lineMatches("path: …/conf/worker.yaml", "path: /opt/x/conf/worker.yaml")).isTrue();
    assertThat(lineMatches("a … b", "a  b")).isTrue();
    assertThat(lineMatches("exit 1 (x)", "exit 1 (x)")).isTrue();
    assertThat(lineMatches("exit 1 (x)", "exit 2 (x)")).isFalse();
    assertThat(lineMatches("value: 45s", "  value: 45s")).isFalse();
  }

  @Test
  void every_relative_link_resolves_and_every_docs_page_is_linked_from_the_readme()
      throws IOException {
    List<String> broken = new ArrayList<>();
    Set<Path> fromReadme = new LinkedHashSet<>();
    for (Path page : pages()) {
      for (String target : links(page)) {
        if (target.matches("^[a-zA-Z][a-zA-Z+.-]*:.*")) {
          continue; // https:, mailto:
        }
        int hash = target.indexOf('#');
        String path = hash < 0 ? target : target.substring(0, hash);
        String anchor = hash < 0 ? null : target.substring(hash + 1);
        Path file = path.isEmpty() ? page : page.getParent().resolve(path).normalize();
        if (!Files.exists(file)) {
          broken.add(repo().relativize(page) + ": " + target + ": no such file");
          continue;
        }
        if (anchor != null
            && !(file.toString().endsWith(".md") && anchors(file).contains(anchor))) {
          broken.add(
              repo().relativize(page)
                  + ": "
                  + target
                  + ": no heading #"
                  + anchor
                  + " in "
                  + repo().relativize(file));
        }
        if (page.getFileName().toString().equals("README.md") && page.getParent().equals(repo())) {
          fromReadme.add(file);
        }
      }
    }
    assertThat(broken).as("broken links").isEmpty();
    List<Path> docs = pages().subList(1, pages().size());
    assertThat(docs).as("docs pages").isNotEmpty();
    assertThat(fromReadme).as("pages linked from README.md").containsAll(docs);
  }

  @Test
  void the_readme_lists_the_commands_and_exit_codes_of_help() throws Exception {
    DistProcess.Result help = DistProcess.run(tmp, "--help");
    assertThat(help.exit()).isZero();
    Set<String> commands = new TreeSet<>();
    Set<String> codes = new TreeSet<>();
    String section = "";
    for (String line : help.out().lines().toList()) {
      if (line.endsWith(":") && !line.startsWith(" ")) {
        section = line;
        continue;
      }
      Matcher m = Pattern.compile("^ {2}(\\S+)\\s").matcher(line);
      if (section.equals("Commands:") && m.find() && !m.group(1).equals("help")) {
        commands.add(m.group(1));
      }
      Matcher c = Pattern.compile("^ {2}(\\d+)\\s").matcher(line);
      if (section.equals("Exit codes:") && c.find()) {
        codes.add(c.group(1));
      }
    }
    assertThat(commands).as("commands in --help").contains("run", "dev", "call");

    String readme = Files.readString(repo().resolve("README.md"));
    int from = readme.indexOf("\n## Commands");
    assertThat(from).as("README has a ## Commands section").isPositive();
    int to = readme.indexOf("\n## ", from + 1);
    String table = readme.substring(from, to < 0 ? readme.length() : to);
    Set<String> listed = new TreeSet<>();
    Set<String> listedCodes = new TreeSet<>();
    for (String line : table.lines().toList()) {
      Matcher m = Pattern.compile("^\\|\\s*\\[?`(?:phrony-worker )?([a-z-]+)").matcher(line);
      if (m.find()) {
        listed.add(m.group(1));
      }
      Matcher c = Pattern.compile("^\\|\\s*(\\d+)\\s*\\|").matcher(line);
      if (c.find()) {
        listedCodes.add(c.group(1));
      }
    }
    assertThat(listed).as("commands in the README's table").isEqualTo(commands);
    assertThat(listedCodes).as("exit codes in the README's table").isEqualTo(codes);
  }

  @Test
  void the_plugin_guide_gives_the_install_command_the_new_plugin_test_runs() throws IOException {
    assertThat(Files.readString(repo().resolve("docs/plugins.md")))
        .contains("./mvnw -B " + String.join(" ", NewPluginIT.INSTALL_KIT));
  }

  /** The fenced blocks of a page, in order. */
  static List<Block> blocks(Path page) throws IOException {
    List<String> lines = Files.readAllLines(page);
    List<Block> blocks = new ArrayList<>();
    for (int i = 0; i < lines.size(); i++) {
      Matcher open = FENCE.matcher(lines.get(i));
      if (!open.matches()) {
        continue;
      }
      int indent = open.group(1).length();
      String fence = open.group(2);
      StringBuilder text = new StringBuilder();
      int j = i + 1;
      for (; j < lines.size(); j++) {
        String l = lines.get(j);
        if (l.strip().startsWith(fence) && l.strip().replace(fence.substring(0, 1), "").isEmpty()) {
          break;
        }
        text.append(
                l.length() >= indent && l.substring(0, indent).isBlank()
                    ? l.substring(indent)
                    : l.stripLeading())
            .append('\n');
      }
      blocks.add(new Block(page, i + 1, open.group(3), text.toString(), j + 1));
      i = j;
    }
    return blocks;
  }

  private static boolean blankBetween(Path page, int afterLine, int beforeLine) throws IOException {
    List<String> lines = Files.readAllLines(page);
    return lines.subList(afterLine, beforeLine - 1).stream().allMatch(String::isBlank);
  }

  /** The page's text outside fenced blocks, with inline code removed. */
  private static List<String> prose(Path page) throws IOException {
    List<String> lines = Files.readAllLines(page);
    List<String> out = new ArrayList<>();
    String fence = null;
    for (String l : lines) {
      Matcher m = FENCE.matcher(l);
      if (fence == null && m.matches()) {
        fence = m.group(2);
      } else if (fence != null && l.strip().startsWith(fence)) {
        fence = null;
      } else if (fence == null && !l.startsWith("    ")) {
        out.add(l);
      } else {
        out.add("");
      }
    }
    return out;
  }

  private static List<String> links(Path page) throws IOException {
    List<String> targets = new ArrayList<>();
    for (String l : prose(page)) {
      Matcher m = LINK.matcher(l.replaceAll("``[^`]*``|`[^`]*`", "code"));
      while (m.find()) {
        targets.add(m.group(1));
      }
    }
    // A link may break across lines: join the text and look again for what a line hid.
    String joined = String.join(" ", prose(page)).replaceAll("``[^`]*``|`[^`]*`", "code");
    Matcher m = LINK.matcher(joined);
    Set<String> all = new LinkedHashSet<>(targets);
    while (m.find()) {
      all.add(m.group(1));
    }
    return new ArrayList<>(all);
  }

  /** The anchors GitHub makes of a page's headings. */
  static Set<String> anchors(Path page) throws IOException {
    Set<String> anchors = new LinkedHashSet<>();
    Map<String, Integer> seen = new LinkedHashMap<>();
    for (String l : prose(page)) {
      Matcher m = HEADING.matcher(l);
      if (!m.matches()) {
        continue;
      }
      String slug = slug(m.group(2));
      int n = seen.merge(slug, 1, Integer::sum) - 1;
      anchors.add(n == 0 ? slug : slug + "-" + n);
    }
    return anchors;
  }

  /** GitHub's heading anchor: lower case, punctuation dropped, spaces as hyphens. */
  static String slug(String heading) {
    String text = heading.replaceAll("\\[([^\\]]*)]\\([^)]*\\)", "$1");
    return text.toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N} _-]", "").replace(' ', '-');
  }

  @Test
  void anchors_are_made_as_github_makes_them() {
    assertThat(slug("`run`'s settings")).isEqualTo("runs-settings");
    assertThat(slug("6. Try it with `dev`")).isEqualTo("6-try-it-with-dev");
    assertThat(slug("`phrony-worker dev`")).isEqualTo("phrony-worker-dev");
    assertThat(slug("TLS and tokens")).isEqualTo("tls-and-tokens");
  }
}
