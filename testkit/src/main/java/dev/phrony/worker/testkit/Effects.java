package dev.phrony.worker.testkit;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Side effects decided under the registry lock and carried out after it is released: writers to
 * flush (transport work) and dispatch futures to complete (caller code may run on completion).
 */
final class Effects {

  private final List<WorkerStream> writers = new ArrayList<>(2);
  private List<CompletableFuture<Outcome>> futures;
  private List<Outcome> outcomes;

  void flush(WorkerStream writer) {
    if (!writers.contains(writer)) {
      writers.add(writer);
    }
  }

  void complete(CompletableFuture<Outcome> future, Outcome outcome) {
    if (futures == null) {
      futures = new ArrayList<>(2);
      outcomes = new ArrayList<>(2);
    }
    futures.add(future);
    outcomes.add(outcome);
  }

  /** Flushes first, so acks and invokes are on their way before caller callbacks run. */
  void run() {
    for (WorkerStream writer : writers) {
      writer.flush();
    }
    if (futures != null) {
      for (int i = 0; i < futures.size(); i++) {
        futures.get(i).complete(outcomes.get(i));
      }
    }
  }
}
