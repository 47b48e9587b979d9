package dev.phrony.worker.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.state.StateDir;
import dev.phrony.worker.testing.ChildJvm;
import java.io.BufferedReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * kill -9 at varied points: every result whose hold() returned, and every intent whose
 * recordIntent() returned, is there after a restart, and nothing is damaged.
 */
class CrashSafetyTest {
  private static final int ROUNDS = 20;

  @TempDir Path tmp;

  @Test
  void every_acknowledged_write_survives_sigkill_at_any_point() throws Exception {
    Path dir = tmp.resolve("state");
    Random random = new Random(20260301);
    Set<String> held = new HashSet<>();
    Set<String> intents = new HashSet<>();
    int totalClaims = 0;
    for (int round = 0; round < ROUNDS; round++) {
      String prefix = "r" + round;
      Process child =
          ChildJvm.start(
              CrashWriterMain.class, dir.toString(), prefix, Integer.toString(1 + round % 8));
      // Kill after a varied number of claims: 0 (right after start), a few, or many.
      int killAfter =
          switch (round % 4) {
            case 0 -> random.nextInt(3);
            case 1 -> 1 + random.nextInt(20);
            case 2 -> 20 + random.nextInt(200);
            default -> 200 + random.nextInt(600);
          };
      int claims = 0;
      BufferedReader in = ChildJvm.lines(child);
      try {
        String line = in.readLine();
        assertThat(line).as("child start").isEqualTo("READY");
        while (claims < killAfter && (line = in.readLine()) != null) {
          claims += record(line, held, intents);
        }
      } finally {
        // SIGKILL, through the handle: Process.destroyForcibly would also close our end of the
        // pipe, and the lines already in it are claims worth checking.
        child.toHandle().destroyForcibly();
        assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
      }
      // Lines printed before the kill are claims too: hold() had returned for each.
      for (String line; (line = in.readLine()) != null; ) {
        claims += record(line, held, intents);
      }
      totalClaims += claims;

      try (StateDir sd = StateDir.open(dir);
          DurableOutbox o =
              DurableOutbox.open(
                  sd,
                  new DurableOutbox.Options(
                      Durability.WRITES, null, java.time.InstantSource.system()))) {
        assertThat(o.problems()).as("round %d: no damage after kill -9", round).isEmpty();
        for (String id : held) {
          assertThat(o.find(id)).as("round %d: held result %s", round, id).isPresent();
        }
        for (String id : intents) {
          assertThat(o.wasInterrupted(id)).as("round %d: interrupted %s", round, id).isTrue();
        }
      }
      assertThat(dir.resolve("corrupt")).doesNotExist();
    }
    try (Stream<Path> files = Files.list(dir.resolve("outbox"))) {
      assertThat(files).noneMatch(p -> p.toString().endsWith(".tmp"));
    }
    System.out.printf(
        "crash safety: %d kill -9 rounds, %d acknowledged writes checked "
            + "(%d held, %d interrupted)%n",
        ROUNDS, totalClaims, held.size(), intents.size());
  }

  private static int record(String line, Set<String> held, Set<String> intents) {
    if (line.startsWith("HELD ")) {
      held.add(line.substring(5));
      return 1;
    }
    if (line.startsWith("RELEASING ")) {
      held.remove(line.substring(10)); // a release may or may not survive: either is right
      return 0;
    }
    if (line.startsWith("INTENT ")) {
      intents.add(line.substring(7));
      return 1;
    }
    throw new AssertionError("unexpected child output: " + line);
  }
}
