package dev.phrony.worker.reload;

import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.work.WorkClient;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The Work client as a reload sees it, driven by the test: a hand-over registers at once (or when
 * the test says), retires when the test says, and replaced classloaders are unused when the test
 * says. {@link #log} has each generation kept and served, in order.
 */
final class FakeGenerations implements Generations {
  /** A {@link #serve}: what was handed over, and its hand-over. */
  record Served(HandlerCatalog catalog, int number, WorkClient.Handover handover) {}

  /** A {@link #whenUnused}: the loaders asked about, and the answer the test completes. */
  record UnusedWait(Set<ClassLoader> loaders, CompletableFuture<Void> unused) {}

  final List<String> log = new CopyOnWriteArrayList<>();
  final List<Served> served = new CopyOnWriteArrayList<>();
  final List<UnusedWait> unusedWaits = new CopyOnWriteArrayList<>();
  private final boolean registerAtOnce;
  private volatile int generation = 1;

  /** {@code registerAtOnce} false: no hand-over registers until the test completes it. */
  FakeGenerations(boolean registerAtOnce) {
    this.registerAtOnce = registerAtOnce;
  }

  /** The reloader's {@code keepGeneration}. */
  void keep(int number) {
    log.add("keep " + number);
  }

  @Override
  public int generation() {
    return generation;
  }

  @Override
  public WorkClient.Handover serve(HandlerCatalog next, int number, String imageDigest) {
    log.add("serve " + number);
    WorkClient.Handover h =
        new WorkClient.Handover(number, new CompletableFuture<>(), new CompletableFuture<>());
    if (registerAtOnce) {
      h.registered().complete(null);
    }
    generation = number;
    served.add(new Served(next, number, h));
    return h;
  }

  @Override
  public CompletableFuture<Void> whenUnused(Set<ClassLoader> loaders) {
    UnusedWait w = new UnusedWait(loaders, new CompletableFuture<>());
    unusedWaits.add(w);
    return w.unused();
  }
}
