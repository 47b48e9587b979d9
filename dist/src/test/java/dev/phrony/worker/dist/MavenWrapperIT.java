package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's test command works where the default java is older than 21 and JAVA_HOME is unset:
 * the wrapper chooses a JDK 21 or newer as the launcher does.
 */
class MavenWrapperIT {
  @Test
  void the_wrapper_builds_with_a_jdk_21_or_newer_without_java_home() throws Exception {
    Path repo = Path.of(System.getProperty("phrony.repo.dir")).toRealPath();
    ProcessBuilder pb =
        new ProcessBuilder(repo.resolve("mvnw").toString(), "-B", "-v")
            .directory(repo.toFile())
            .redirectErrorStream(true);
    pb.environment().remove("JAVA_HOME");
    pb.environment().put("PATH", "/usr/bin:/bin"); // the machine's default java, whatever it is
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(2, TimeUnit.MINUTES)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    Matcher m = Pattern.compile("Java version: (\\d+)").matcher(out);
    assertThat(m.find()).as(out).isTrue();
    assertThat(Integer.parseInt(m.group(1))).as(out).isGreaterThanOrEqualTo(21);
  }

  @Test
  void a_java_home_reached_through_a_link_is_kept_as_it_is(@TempDir Path tmp) throws Exception {
    Path repo = Path.of(System.getProperty("phrony.repo.dir")).toRealPath();
    Path link =
        Files.createSymbolicLink(
            tmp.resolve("jdk"), Path.of(System.getProperty("java.home")).toRealPath());
    ProcessBuilder pb =
        new ProcessBuilder(repo.resolve("mvnw").toString(), "-B", "-v")
            .directory(repo.toFile())
            .redirectErrorStream(true);
    pb.environment().put("JAVA_HOME", link.toString());
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(2, TimeUnit.MINUTES)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    assertThat(out)
        .doesNotContain("older than Java 21")
        .contains("Java version: " + Runtime.version().feature());
  }
}
