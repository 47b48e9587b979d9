package dev.phrony.worker.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Which steps and rows {@code --only} runs, and the paired rows' slicing. */
class OptionsTest {

  private static Options only(boolean quick, String... steps) {
    return new Options(
        quick,
        Set.of(steps),
        Path.of("dist"),
        Path.of("work"),
        Path.of("o.json"),
        quick ? Duration.ofMillis(700) : Duration.ofSeconds(5),
        Duration.ofSeconds(10),
        null,
        null);
  }

  @Test
  void no_only_runs_every_step_and_every_row_of_step_64() {
    Options o = only(false);

    assertThat(o.runs("ceiling")).isTrue();
    assertThat(o.runs("inflight")).isTrue();
    assertThat(o.names("inflight")).isFalse();
    assertThat(o.row("c1")).isTrue();
    assertThat(o.row("s64")).isTrue();
  }

  @Test
  void a_row_of_step_64_runs_that_step_and_only_that_row() {
    Options o = only(false, "c64");

    assertThat(o.runs("64")).isTrue();
    assertThat(o.runs("ceiling")).isFalse();
    assertThat(o.runs("1000")).isFalse();
    assertThat(o.row("c64")).isTrue();
    assertThat(o.row("c1")).isFalse();
    assertThat(o.row("s64")).isFalse();
  }

  @Test
  void naming_step_64_runs_all_its_rows_and_naming_a_step_runs_only_it() {
    assertThat(only(false, "64").row("s64")).isTrue();
    Options o = only(true, "reload", "list");
    assertThat(o.runs("reload")).isTrue();
    assertThat(o.names("reload")).isTrue();
    assertThat(o.runs("list")).isTrue();
    assertThat(o.runs("64")).isFalse();
  }

  @Test
  void paired_rows_slice_a_full_run_in_five_and_rewarm_at_most_the_warm_up() {
    assertThat(only(false).slices()).isEqualTo(5);
    assertThat(only(false).rewarm()).isEqualTo(Duration.ofSeconds(1));
    assertThat(only(true).slices()).isEqualTo(1);
    assertThat(only(true).rewarm()).isEqualTo(Duration.ofMillis(700));
  }
}
