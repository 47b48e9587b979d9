package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.outbox.DurableOutbox;
import dev.phrony.worker.outbox.HeldResult;
import dev.phrony.worker.state.StateDir;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import java.io.IOException;
import java.io.OutputStream;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The outbox on small and damaged disks, as an operator meets them: a state dir with less room than
 * a segment, a full one at start, and a damaged newer snapshot beside an intact older one. The
 * small disks are real: a tmpfs of a few MiB (mounting one needs root; the tests are skipped
 * without it).
 */
class OutboxDiskIT {
  private static final String PAYMENT = "{\"amount\":12.5,\"currency\":\"EUR\",\"payee\":\"Acme\"}";

  @TempDir Path tmp;

  private Path mounted;

  @AfterEach
  void unmount() throws Exception {
    if (mounted != null) {
      new ProcessBuilder("umount", "-l", mounted.toString()).inheritIO().start().waitFor();
    }
  }

  /** A tmpfs of {@code mib} MiB at a fresh folder; the test is skipped when it cannot be made. */
  private Path smallDisk(int mib) throws Exception {
    Path at = Files.createDirectories(tmp.resolve("disk"));
    Process p =
        new ProcessBuilder(
                "mount", "-t", "tmpfs", "-o", "size=" + mib + "m", "tmpfs", at.toString())
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    boolean ok = p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
    assumeTrue(ok, "a small disk needs 'mount -t tmpfs' (root): " + out.strip());
    mounted = at;
    return at;
  }

  private static Path stateDirIn(Path parent) throws IOException {
    Path state = Files.createDirectories(parent.resolve("state"));
    Files.setPosixFilePermissions(
        state, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    return state;
  }

  @Test
  void a_state_dir_with_less_room_than_a_segment_still_takes_write_calls_but_is_not_ready()
      throws Exception {
    Path state = stateDirIn(smallDisk(3));
    Path plugins = Files.createDirectories(tmp.resolve("plugins"));
    GeneratedPlugins.copyBundled("payments", plugins);
    try (LocalRuntime rt = LocalRuntime.builder().port(0).start();
        DistProcess worker =
            DistProcess.start(
                tmp,
                Map.of("PHRONY_RUNTIME_ADDR", rt.target()),
                "run",
                "--plugins",
                plugins.toString(),
                "--http",
                "127.0.0.1:0",
                "--state-dir",
                state.toString())) {
      int http = worker.httpPort();
      worker.until(
          "registered",
          () -> rt.workers().stream().anyMatch(w -> w.connected()),
          DistProcess.DEADLINE);

      Outcome paid =
          rt.dispatch(Call.of("payments.process-payment", "1.0.0", PAYMENT))
              .get(30, TimeUnit.SECONDS);
      assertThat(paid)
          .as("%s; stderr: %s", paid, worker.stderr())
          .isInstanceOf(Outcome.Result.class);

      HttpResponse<String> ready = DistProcess.get(http, "/readyz");
      assertThat(ready.statusCode()).isEqualTo(503);
      assertThat(ready.body())
          .contains(state.resolve("outbox").toString())
          .contains("less than one segment of its log (4.0 MiB)");
      String metrics = DistProcess.get(http, "/metrics").body();
      assertThat(metrics).containsPattern("(?m)^phrony_worker_outbox_disk_free_bytes [0-9.E]+$");
      assertThat(metrics).containsPattern("(?m)^phrony_worker_outbox_durability_failures_total 0");
      assertThat(worker.stderr())
          .contains("level=WARN")
          .contains("less than one segment of its log");
    }
  }

  @Test
  void a_full_disk_at_start_names_the_state_dir_and_the_fix() throws Exception {
    Path disk = smallDisk(1);
    Path state = stateDirIn(disk);
    try (OutputStream fill = Files.newOutputStream(disk.resolve("fill"))) {
      byte[] block = new byte[64 << 10];
      while (true) {
        fill.write(block);
      }
    } catch (IOException full) {
      // No space left on device: the disk is full
    }
    DistProcess.Result r =
        DistProcess.run(
            tmp,
            "run",
            "--state-dir",
            state.toString(),
            "--http",
            "none",
            "--runtime",
            "127.0.0.1:1");
    assertThat(r.exit()).as(r.err()).isEqualTo(1);
    assertThat(r.err().lines().toList())
        .last()
        .isEqualTo(
            "phrony-worker run: --state-dir "
                + state
                + ": cannot write to it (No space left on device): free space on its disk, or"
                + " choose another state dir with --state-dir");
  }

  @Test
  void a_damaged_newer_snapshot_beside_an_intact_older_one_costs_no_result() throws Exception {
    Path state = stateDirIn(tmp);
    List<String> ids = new ArrayList<>();
    for (int i = 1; i <= 29; i++) {
      ids.add("s-1:av-1:" + i + ":0");
    }
    holdAndClose(state, ids.subList(0, 15)); // a batch file
    Path older = holdAndClose(state, ids.subList(15, 29)); // another: closing compacts them
    byte[] olderBytes = Files.readAllBytes(older);
    Path newer = holdAndClose(state, List.of("s-1:av-1:30:0")); // the next compaction...
    Files.write(older, olderBytes); // ...published its snapshot, then stopped
    byte[] damaged = Files.readAllBytes(newer);
    Arrays.fill(damaged, 64, damaged.length, (byte) 0x33);
    Files.write(newer, damaged);

    DistProcess.Result list =
        DistProcess.run(tmp, "outbox", "list", "--state-dir", state.toString());
    assertThat(list.out()).as(list.err()).contains(ids.getFirst()).contains(ids.getLast());
    assertThat(list.err()).contains(newer.getFileName().toString()).contains("damaged snapshot");

    try (LocalRuntime rt = LocalRuntime.builder().port(0).start();
        DistProcess worker =
            DistProcess.start(
                tmp,
                Map.of("PHRONY_RUNTIME_ADDR", rt.target()),
                "run",
                "--http",
                "none",
                "--state-dir",
                state.toString())) {
      worker.awaitStderr("connecting to", DistProcess.DEADLINE); // serving: signals drain it
      assertThat(worker.stderr()).contains("opened: 29 held");
      worker.terminate();
      assertThat(worker.awaitExit(DistProcess.DEADLINE).exit()).isZero();
    }
    DistProcess.Result after =
        DistProcess.run(tmp, "outbox", "list", "--state-dir", state.toString());
    assertThat(after.err()).as("the damage is set aside, the rest rewritten").isEmpty();
    for (String id : ids) {
      assertThat(after.out()).contains(id);
    }
    try (Stream<Path> aside = Files.list(state.resolve("corrupt"))) {
      assertThat(aside.map(p -> p.getFileName().toString()))
          .anyMatch(n -> n.startsWith(newer.getFileName().toString()) && !n.endsWith(".txt"));
    }
  }

  /** Opens the outbox as a worker would, holds write results, closes it; its newest snapshot. */
  private static Path holdAndClose(Path state, List<String> callIds) throws IOException {
    try (StateDir sd = StateDir.open(state);
        DurableOutbox o = DurableOutbox.open(sd, DurableOutbox.Options.defaults())) {
      for (String id : callIds) {
        o.hold(
            new HeldResult(
                id,
                "s-1",
                "payments.process-payment@1.0.0",
                "non_idempotent_write",
                Instant.now(),
                new CallOutcome.Payload(
                    ("{\"payment\":\"" + id + "\"}").getBytes(StandardCharsets.UTF_8))));
      }
    }
    try (Stream<Path> files = Files.list(state.resolve("outbox"))) {
      return files
          .filter(p -> p.toString().endsWith(".snap"))
          .sorted()
          .reduce((a, b) -> b)
          .orElse(state.resolve("outbox/none.snap"));
    }
  }
}
