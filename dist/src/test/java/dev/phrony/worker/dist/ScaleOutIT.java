package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three {@code bin/phrony-worker run} processes serve {@code echo@default} from one runtime, each
 * with its own state dir and HTTP port: calls spread over all three; a {@code kill -9} of one
 * mid-load fails only the calls it was running (indeterminate, as the runtime reports a lost
 * worker), the others keep serving, and the survivors stay ready.
 */
class ScaleOutIT {
  /** Slots per worker: small, so a burst needs all three. */
  private static final int SLOTS = 4;

  private static final List<String> IDS = List.of("scale-1", "scale-2", "scale-3");

  @TempDir Path tmp;

  private static Outcome await(CompletableFuture<Outcome> f) throws Exception {
    return f.get(60, TimeUnit.SECONDS);
  }

  private static List<CompletableFuture<Outcome>> burst(LocalRuntime rt, int n, int sleepMs) {
    List<CompletableFuture<Outcome>> calls = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      calls.add(rt.dispatch(Call.of("echo", "default", "{\"sleep_ms\":" + sleepMs + "}")));
    }
    return calls;
  }

  private static int readyz(int port) {
    return DistProcess.status(port, "/readyz");
  }

  @Test
  void calls_spread_over_three_workers_and_a_killed_one_fails_only_its_own_calls()
      throws Exception {
    List<DistProcess> workers = new ArrayList<>();
    try (LocalRuntime rt = LocalRuntime.builder().port(0).start()) {
      for (String id : IDS) {
        workers.add(
            DistProcess.start(
                tmp,
                Map.of(
                    "PHRONY_RUNTIME_ADDR",
                    rt.target(),
                    "PHRONY_WORKER_HANDLERS",
                    "echo@default:max-concurrency=" + SLOTS),
                "run",
                "--worker-id",
                id,
                "--state-dir",
                tmp.resolve(id).toString(),
                "--http",
                "127.0.0.1:0",
                "--drain-timeout",
                "5s"));
      }
      List<Integer> ports = new ArrayList<>();
      for (int i = 0; i < IDS.size(); i++) {
        String id = IDS.get(i);
        Await.until(
            id + " registered",
            () -> rt.worker(id).filter(w -> w.connected()).isPresent(),
            DistProcess.DEADLINE);
        ports.add(workers.get(i).httpPort());
      }
      for (int port : ports) {
        Await.until("ready on " + port, () -> readyz(port) == 200, DistProcess.DEADLINE);
      }

      // A burst that needs every slot: it spreads over all three workers.
      Set<String> servedBy = new HashSet<>();
      for (CompletableFuture<Outcome> f : burst(rt, IDS.size() * SLOTS, 500)) {
        Outcome o = await(f);
        assertThat(o).as("%s", o).isInstanceOf(Outcome.Result.class);
        servedBy.add(o.trace().workerId());
      }
      assertThat(servedBy).containsExactlyInAnyOrderElementsOf(IDS);

      // Under load, kill -9 the second worker while all its slots are busy.
      List<CompletableFuture<Outcome>> load = burst(rt, 2 * IDS.size() * SLOTS, 1_000);
      String victim = IDS.get(1);
      Await.until(
          victim + " busy",
          () -> rt.worker(victim).map(w -> w.busy("echo@default")).orElse(0) == SLOTS,
          Duration.ofSeconds(30));
      workers.get(1).kill();
      List<Integer> survivors = List.of(ports.get(0), ports.get(2));
      // The survivors' probes are asked every 50 ms while the load runs, and must say ready.
      Await.until(
          "the load finished",
          () -> {
            for (int port : survivors) {
              assertThat(readyz(port)).as("survivor on %d stays ready", port).isEqualTo(200);
            }
            return load.stream().allMatch(CompletableFuture::isDone);
          },
          Duration.ofSeconds(60),
          Duration.ofMillis(50));
      int lost = 0;
      for (CompletableFuture<Outcome> f : load) {
        Outcome o = await(f);
        if (o instanceof Outcome.DispatchError e) {
          assertThat(e.kind()).as("%s", o).isEqualTo(Outcome.Kind.INDETERMINATE);
          assertThat(e.trace().workerId()).isEqualTo(victim);
          lost++;
        } else {
          assertThat(o).as("%s", o).isInstanceOf(Outcome.Result.class);
          assertThat(o.trace().workerId()).isIn(IDS.get(0), IDS.get(2));
        }
      }
      assertThat(lost).as("only the victim's running calls are lost").isEqualTo(SLOTS);

      // The survivors keep serving, still spread over both.
      Set<String> after = new HashSet<>();
      for (CompletableFuture<Outcome> f : burst(rt, 2 * SLOTS, 300)) {
        Outcome o = await(f);
        assertThat(o).as("%s", o).isInstanceOf(Outcome.Result.class);
        after.add(o.trace().workerId());
      }
      assertThat(after).containsExactlyInAnyOrder(IDS.get(0), IDS.get(2));
      for (int port : survivors) {
        assertThat(readyz(port)).isEqualTo(200);
        assertThat(DistProcess.get(port, "/metrics").body())
            .contains(
                "phrony_worker_invocations_total{code=\"\",outcome=\"result\","
                    + "tool=\"echo@default\"}")
            .contains("phrony_worker_slots_max{tool=\"echo@default\"} " + SLOTS)
            .containsPattern("(?m)^phrony_worker_slots_in_use_ratio ")
            .contains("phrony_worker_registered 1");
      }

      // Each worker's state dir, made by run, is the owner's alone.
      for (String id : IDS) {
        assertOwnerOnly(tmp.resolve(id));
      }

      for (int i : new int[] {0, 2}) {
        workers.get(i).terminate();
        DistProcess.Result exit = workers.get(i).awaitExit(Duration.ofSeconds(60));
        assertThat(exit.exit()).as("exit; stderr:%n%s", exit.err()).isZero();
      }
    } finally {
      for (DistProcess w : workers) {
        w.close();
      }
    }
  }

  private static void assertOwnerOnly(Path stateDir) throws IOException {
    assertThat(Files.getPosixFilePermissions(stateDir))
        .isEqualTo(PosixFilePermissions.fromString("rwx------"));
    try (Stream<Path> all = Files.walk(stateDir)) {
      for (Path p : all.toList()) {
        assertThat(Files.getPosixFilePermissions(p))
            .as("%s", p)
            .doesNotContain(
                PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE,
                PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.OTHERS_READ,
                PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE);
      }
    }
  }
}
