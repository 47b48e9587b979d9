package dev.phrony.worker.reload;

import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.work.WorkClient;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * What a reload hands a new plugin set to: the generation served now, the hand-over to the next
 * one, and when replaced classloaders are no longer in use. The worker's {@link WorkClient} is one
 * ({@link #of}); a test gives a fake, so a reload is tested without a runtime or a lease.
 *
 * <p>Owned here, not by {@code work}: the Work client knows nothing of reloads, and {@code work}
 * imports nothing from the packages above it.
 */
public interface Generations {

  /** The generation served now. */
  int generation();

  /** Serves {@code next} as generation {@code number} (see {@link WorkClient#serve}). */
  WorkClient.Handover serve(HandlerCatalog next, int number, String imageDigest);

  /** Completes once no call runs, or is still to run, code of {@code loaders}. */
  CompletableFuture<Void> whenUnused(Set<ClassLoader> loaders);

  /** The generations of {@code client}. */
  static Generations of(WorkClient client) {
    return new Generations() {
      @Override
      public int generation() {
        return client.generation();
      }

      @Override
      public WorkClient.Handover serve(HandlerCatalog next, int number, String imageDigest) {
        return client.serve(next, number, imageDigest);
      }

      @Override
      public CompletableFuture<Void> whenUnused(Set<ClassLoader> loaders) {
        return client.whenUnused(loaders);
      }
    };
  }
}
