package dev.phrony.worker.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The JSON report is JSON, whatever a row's text or a host's log line holds. */
class ReportTest {

  @Test
  void writes_json_that_parses_back_to_the_same_strings_numbers_and_nulls(@TempDir Path dir)
      throws Exception {
    String awkward = "say \"hi\" in c:\\dir\n\tthen \u0007 bell, \u001b[31m red, \u202e rtl";
    Report report = new Report();
    report.meta.put("mode", "quick");
    report.add(
        new Report.Row(
            "2a",
            awkward,
            "1 000 calls/s",
            "0.50x",
            ">= 0.50x",
            true,
            Report.figures(
                "per_s",
                1234.56789,
                "p99_ms",
                Double.NaN,
                "calls",
                42L,
                "first_error",
                null,
                "lines",
                List.of(awkward, "plain"))));
    Path file = dir.resolve("report.json");

    report.writeJson(file);

    String text = Files.readString(file);
    assertThat(text).doesNotContain("\u001b", "\u202e", "\u0007"); // escaped, safe to cat
    JsonNode doc = new ObjectMapper().readTree(text);
    assertThat(doc.path("mode").asText()).isEqualTo("quick");
    JsonNode row = doc.path("rows").get(0);
    assertThat(row.path("scenario").asText()).isEqualTo(awkward);
    assertThat(row.path("met").asBoolean()).isTrue();
    JsonNode figures = row.path("figures");
    assertThat(figures.path("per_s").asDouble()).isEqualTo(1234.5679);
    assertThat(figures.path("p99_ms").isNull()).isTrue();
    assertThat(figures.path("calls").asLong()).isEqualTo(42);
    assertThat(figures.path("first_error").isNull()).isTrue();
    assertThat(figures.path("lines").get(0).asText()).isEqualTo(awkward);
  }

  @Test
  void prints_one_aligned_table_line_a_row_under_its_heading() {
    Report report = new Report();
    report.add(
        new Report.Row(
            "1a", "ceiling", "983 round trips/s", "reference", "", null, Report.figures()));
    report.add(
        new Report.Row(
            "6b",
            "list-handlers, 100 plugins",
            "7.96 s",
            "7.96 s",
            "<= 2.0 s",
            false,
            Report.figures()));
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();

    report.print(new java.io.PrintStream(bytes, true, java.nio.charset.StandardCharsets.UTF_8));

    List<String> lines = bytes.toString(java.nio.charset.StandardCharsets.UTF_8).lines().toList();
    assertThat(lines).hasSize(3);
    assertThat(lines.get(0)).startsWith("#   SCENARIO").endsWith("MET");
    assertThat(lines.get(1)).startsWith("1a  ceiling").endsWith("-");
    assertThat(lines.get(2)).startsWith("6b  list-handlers, 100 plugins").endsWith("NO");
    int result = lines.get(0).indexOf("RESULT");
    assertThat(lines.get(1).indexOf("983 round trips/s")).isEqualTo(result);
    assertThat(lines.get(2).indexOf("7.96 s")).isEqualTo(result);
  }
}
