package dev.phrony.worker.bench;

/**
 * One step of {@code bin/bench} (the steps {@code --only} names): it starts what its rows measure,
 * measures, adds its rows to the sitting's report and stops what it started. It throws when it
 * could not run at all; the runner then reports it as failed and goes on.
 */
interface Scenario {
  void run(Sitting sitting) throws Exception;
}
