package dev.phrony.worker.work;

import java.util.Objects;

/**
 * What the worker registers as. The worker id is fixed for the life of the process (protocol.md
 * rule 2): every reconnect registers with the same one.
 */
public record WorkerIdentity(String workerId, String workloadIdentity, String imageDigest) {
  public WorkerIdentity {
    Objects.requireNonNull(workerId, "workerId");
    if (workerId.isBlank()) {
      throw new IllegalArgumentException("worker id must not be empty");
    }
    workloadIdentity = workloadIdentity == null ? "" : workloadIdentity;
    imageDigest = imageDigest == null ? "" : imageDigest;
  }
}
