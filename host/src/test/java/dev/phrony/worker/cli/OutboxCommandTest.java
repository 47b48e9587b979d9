package dev.phrony.worker.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.outbox.Durability;
import dev.phrony.worker.outbox.DurableOutbox;
import dev.phrony.worker.outbox.HeldResult;
import dev.phrony.worker.outbox.IntentRecord;
import dev.phrony.worker.outbox.OutboxView;
import dev.phrony.worker.state.StateDir;
import dev.phrony.worker.testkit.ManualClock;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code outbox list|show|purge} on a real state dir, with captured output. */
class OutboxCommandTest {
  @TempDir Path tmp;

  private final ManualClock clock = new ManualClock(Instant.parse("2026-03-01T12:00:00Z"));
  private Path dir;

  private CliRun run(String... args) {
    return CliRun.execute(
        PhronyWorkerCommand.configure(new CommandLine(new OutboxCommand(clock))), args);
  }

  private static HeldResult result(String id, String tool, String payload, Instant at) {
    return new HeldResult(
        id,
        "sess-" + id,
        tool,
        "idempotent_write",
        at,
        new CallOutcome.Payload(payload.getBytes(StandardCharsets.UTF_8)));
  }

  /**
   * held: h1 (1h old), orphaned: o1 (2d), o2 (10d, outside the default retention of none here),
   * interrupted: i1 (3d); e1 held error.
   */
  @BeforeEach
  void populate() throws IOException {
    dir = tmp.resolve("state");
    ManualClock c = new ManualClock(clock.instant().minus(Duration.ofDays(10)));
    try (StateDir sd = StateDir.open(dir);
        DurableOutbox o =
            DurableOutbox.open(sd, new DurableOutbox.Options(Durability.WRITES, null, c))) {
      o.hold(result("o2", "mail.send@2", "{\"sent\":true}", c.instant()));
      o.markOrphaned("o2");
      c.advance(Duration.ofDays(5));
      o.recordIntent(
          new IntentRecord(
              "i1",
              "sess-i1",
              "pay.charge@1",
              "irreversible_action",
              clock.instant().minus(Duration.ofDays(3)))); // started 3 days ago
      c.advance(Duration.ofDays(3));
      o.hold(result("o1", "pay.charge@1", "{\"charged\":12.5,\"currency\":\"EUR\"}", c.instant()));
      o.markOrphaned("o1");
      c.advance(Duration.ofDays(2).minusHours(1));
      o.hold(result("h1", "weather.get@1", "not json", c.instant()));
      o.hold(
          new HeldResult(
              "e1",
              "sess-e1",
              "weather.get@1",
              "idempotent_write",
              c.instant(),
              CallOutcome.error("deadline_exceeded", "after 10s")));
    }
    // reopen once so i1 (no result) is found interrupted, 3 days ago
    ManualClock at = new ManualClock(clock.instant().minus(Duration.ofDays(3)));
    try (StateDir sd = StateDir.open(dir);
        DurableOutbox o =
            DurableOutbox.open(sd, new DurableOutbox.Options(Durability.WRITES, null, at))) {
      assertThat(o.interruptedIds()).containsExactly("i1");
    }
  }

  @Test
  void list_prints_a_table_oldest_first() {
    CliRun r = run("list", "--state-dir", dir.toString());
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.err()).isEmpty();
    assertThat(r.out().lines())
        .containsExactly(
            "CALL_ID  STATE        TOOL           SESSION  AGE  SIZE",
            "o2       orphaned     mail.send@2    sess-o2  10d  13 B",
            "i1       interrupted  pay.charge@1   sess-i1  3d      -",
            "o1       orphaned     pay.charge@1   sess-o1  2d   33 B",
            "e1       held         weather.get@1  sess-e1  1h   26 B",
            "h1       held         weather.get@1  sess-h1  1h    8 B");
  }

  @Test
  void control_and_bidi_characters_in_call_ids_are_shown_escaped() throws IOException {
    String hostile = "x\u001b[2J\r\u0000\u009b31m\u202egnp.exe";
    try (StateDir sd = StateDir.open(dir);
        DurableOutbox o =
            DurableOutbox.open(sd, new DurableOutbox.Options(Durability.WRITES, null, clock))) {
      o.hold(result(hostile, "weather.get@1", "line one\n\u202eline two", clock.instant()));
    }
    String escaped = "x\\u001b[2J\\r\\u0000\\u009b31m\\u202egnp.exe";

    CliRun list = run("list", "--state-dir", dir.toString());
    assertThat(list.out())
        .contains(escaped + "  held")
        .doesNotContain("\u001b", "\r", "\u0000", "\u009b", "\u202e");
    CliRun show = run("show", "--state-dir", dir.toString(), hostile);
    assertThat(show.exit()).as(show.err()).isZero();
    assertThat(show.out())
        .contains("call_id:            " + escaped)
        .contains("line one\n\\u202eline two")
        .doesNotContain("\u001b", "\u202e");
    CliRun purge = run("purge", "--state-dir", dir.toString(), "--all", "--include-held");
    assertThat(purge.out()).contains("purged " + escaped).doesNotContain("\u001b");
  }

  @Test
  void list_as_json() throws IOException {
    CliRun r = run("list", "--state-dir", dir.toString(), "--format", "json");
    assertThat(r.exit()).as(r.err()).isZero();
    JsonNode root = new ObjectMapper().readTree(r.out());
    assertThat(root.get("state_dir").asText()).isEqualTo(dir.toString());
    assertThat(root.get("worker_pid").isNull()).isTrue();
    assertThat(root.get("calls")).hasSize(5);
    JsonNode first = root.get("calls").get(0);
    assertThat(first.get("call_id").asText()).isEqualTo("o2");
    assertThat(first.get("state").asText()).isEqualTo("orphaned");
    assertThat(first.get("age_seconds").asLong()).isEqualTo(Duration.ofDays(10).toSeconds());
    assertThat(first.get("since").asText()).isEqualTo("2026-02-19T12:00:00Z");
    assertThat(root.get("problems")).isEmpty();
  }

  @Test
  @SuppressWarnings("try") // held for its lock only
  void list_works_while_the_worker_holds_the_dir() throws IOException {
    try (StateDir sd = StateDir.open(dir)) {
      CliRun r = run("list", "--state-dir", dir.toString(), "--format", "json");
      assertThat(r.exit()).as(r.err()).isZero();
      assertThat(new ObjectMapper().readTree(r.out()).get("worker_pid").asLong())
          .isEqualTo(ProcessHandle.current().pid());
    }
  }

  @Test
  void show_pretty_prints_a_json_payload() {
    CliRun r = run("show", "o1", "--state-dir", dir.toString());
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out())
        .contains("call_id:            o1")
        .contains("state:              orphaned")
        .contains("tool:               pay.charge@1")
        .contains("session:            sess-o1")
        .contains("completed at:       2026-02-27T12:00:00Z")
        .contains("orphaned since:     2026-02-27T12:00:00Z (2d ago)")
        .contains("size:               33 B")
        .contains("payload:\n{\n  \"charged\" : 12.5,\n  \"currency\" : \"EUR\"\n}");
  }

  @Test
  void show_prints_text_payloads_errors_and_interrupted_calls() throws IOException {
    assertThat(run("show", "h1", "--state-dir", dir.toString()).out())
        .contains("payload:\nnot json\n");
    assertThat(run("show", "e1", "--state-dir", dir.toString()).out())
        .contains("error:              deadline_exceeded: after 10s");
    CliRun i = run("show", "i1", "--state-dir", dir.toString());
    assertThat(i.out())
        .contains("state:              interrupted")
        .contains("started at:         2026-02-26T12:00:00Z")
        .contains("may or may not have acted");
    JsonNode json =
        new ObjectMapper()
            .readTree(run("show", "o1", "--state-dir", dir.toString(), "--format", "json").out());
    assertThat(json.get("payload").get("charged").asDouble()).isEqualTo(12.5);
    assertThat(json.get("completed_at").asText()).isEqualTo("2026-02-27T12:00:00Z");
    JsonNode text =
        new ObjectMapper()
            .readTree(run("show", "h1", "--state-dir", dir.toString(), "--format", "json").out());
    assertThat(text.get("payload_text").asText()).isEqualTo("not json");
  }

  @Test
  void show_of_an_unknown_call_id_says_so_and_exits_1() {
    CliRun r = run("show", "nope", "--state-dir", dir.toString());
    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err()).startsWith("outbox show: no call 'nope' in the outbox of " + dir);
    assertThat(r.out()).isEmpty();
  }

  @Test
  void a_missing_state_dir_is_a_user_error_and_is_not_created() {
    Path missing = tmp.resolve("nowhere");
    for (String sub : new String[] {"list", "purge"}) {
      CliRun r =
          sub.equals("list")
              ? run(sub, "--state-dir", missing.toString())
              : run(sub, "--all", "--state-dir", missing.toString());
      assertThat(r.exit()).as(sub).isEqualTo(1);
      assertThat(r.err())
          .contains("no state dir at " + missing)
          .contains("PHRONY_WORKER_STATE_DIR");
    }
    assertThat(missing).doesNotExist();
  }

  @Test
  void purge_without_a_filter_is_a_usage_error() {
    CliRun r = run("purge", "--state-dir", dir.toString());
    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err())
        .contains("Missing required argument")
        .contains("--older-than")
        .contains("--all");
    assertThat(keptCount()).isEqualTo(5);
  }

  @Test
  void a_bad_duration_names_the_flag_and_gives_an_example() {
    CliRun r = run("purge", "--older-than", "7x", "--state-dir", dir.toString());
    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err())
        .contains("--older-than")
        .contains("'7x' is not a duration")
        .contains("e.g. 7d");
  }

  @Test
  void purge_older_than_removes_old_orphans_and_interrupted_calls_only() throws IOException {
    CliRun r = run("purge", "--older-than", "2d12h", "--state-dir", dir.toString());
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out())
        .contains("purged o2 (orphaned, mail.send@2, 10d)")
        .contains("purged i1 (interrupted, pay.charge@1, 3d)")
        .contains("purged 2 calls from " + dir);
    assertThat(OutboxView.read(dir).entries())
        .extracting(e -> e.callId())
        .containsExactly("o1", "e1", "h1");
  }

  @Test
  void a_call_a_crash_interrupted_is_as_old_as_its_start_even_to_the_purge_that_finds_it()
      throws IOException {
    try (StateDir sd = StateDir.open(dir);
        DurableOutbox o =
            DurableOutbox.open(sd, new DurableOutbox.Options(Durability.WRITES, null, clock))) {
      o.recordIntent(
          new IntentRecord(
              "i2",
              "sess-i2",
              "pay.charge@1",
              "irreversible_action",
              clock.instant().minus(Duration.ofHours(1))));
    } // the worker stopped with i2 running: no open has seen it interrupted yet
    CliRun r = run("purge", "--older-than", "1s", "--state-dir", dir.toString());
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out()).contains("purged i2 (interrupted, pay.charge@1, 1h)");
  }

  @Test
  void purge_all_keeps_held_results_unless_asked() throws IOException {
    assertThat(run("purge", "--all", "--state-dir", dir.toString()).out())
        .contains("purged 3 calls");
    assertThat(OutboxView.read(dir).entries())
        .extracting(e -> e.callId())
        .containsExactlyInAnyOrder("e1", "h1");
    CliRun r =
        run("purge", "--all", "--include-held", "--format", "json", "--state-dir", dir.toString());
    assertThat(new ObjectMapper().readTree(r.out()).get("purged")).hasSize(2);
    assertThat(OutboxView.read(dir).entries()).isEmpty();
  }

  @Test
  @SuppressWarnings("try") // held for its lock only
  void purge_while_the_worker_runs_says_stop_it_first_naming_the_pid() throws IOException {
    try (StateDir running = StateDir.open(dir)) {
      CliRun r = run("purge", "--all", "--state-dir", dir.toString());
      assertThat(r.exit()).isEqualTo(1);
      assertThat(r.err())
          .contains("stop the worker first")
          .contains("pid " + ProcessHandle.current().pid());
    }
    assertThat(keptCount()).isEqualTo(5);
  }

  @Test
  void no_subcommand_is_a_usage_error_and_help_documents_exit_codes() {
    CliRun r = run();
    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err()).contains("a subcommand is required");
    CliRun help = run("purge", "--help");
    assertThat(help.exit()).isZero();
    assertThat(help.out()).contains("Exit codes:").contains("stop the worker first");
  }

  private int keptCount() {
    try {
      return OutboxView.read(dir).entries().size();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
