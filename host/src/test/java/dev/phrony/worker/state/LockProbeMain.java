package dev.phrony.worker.state;

import java.nio.file.Path;

/** Child process for StateDirTest: tries to open the state dir given as its argument. */
public final class LockProbeMain {
  private LockProbeMain() {}

  @SuppressWarnings("try") // held for its lock only
  public static void main(String[] args) throws Exception {
    try (StateDir sd = StateDir.open(Path.of(args[0]))) {
      System.out.println("LOCKED by " + ProcessHandle.current().pid());
    } catch (StateDirLockedException e) {
      System.out.println("REFUSED " + e.getMessage());
      System.exit(2);
    }
  }
}
