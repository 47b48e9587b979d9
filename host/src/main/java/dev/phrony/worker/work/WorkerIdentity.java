package dev.phrony.worker.work;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Supplier;

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

  /** Env names the reference worker reads. */
  public static final String ENV_WORKER_ID = "WORKER_ID";

  public static final String ENV_WORKLOAD_IDENTITY = "WORKER_WORKLOAD_IDENTITY";
  public static final String ENV_IMAGE_DIGEST = "WORKER_IMAGE_DIGEST";

  /**
   * The identity from flags, then the reference worker's environment variables, then defaults: a
   * generated id (kept for the life of the process) and the plugin set's image digest.
   */
  public static WorkerIdentity resolve(
      Optional<String> flagWorkerId,
      Map<String, String> env,
      Supplier<String> defaultWorkerId,
      String defaultImageDigest) {
    String id =
        flagWorkerId
            .filter(s -> !s.isBlank())
            .or(() -> nonBlank(env.get(ENV_WORKER_ID)))
            .orElseGet(defaultWorkerId);
    return new WorkerIdentity(
        id,
        env.getOrDefault(ENV_WORKLOAD_IDENTITY, ""),
        nonBlank(env.get(ENV_IMAGE_DIGEST)).orElse(defaultImageDigest));
  }

  /** {@code <hostname>-<8 hex>}: unique among live workers, readable in the runtime's views. */
  public static String generateId() {
    byte[] b = new byte[4];
    new SecureRandom().nextBytes(b);
    return hostname() + "-" + HexFormat.of().formatHex(b);
  }

  private static String hostname() {
    String host = System.getenv("HOSTNAME");
    if (host == null || host.isBlank()) {
      try {
        host = InetAddress.getLocalHost().getHostName();
      } catch (UnknownHostException e) {
        host = "worker";
      }
    }
    // Keep the id a plain token whatever the host is called.
    host = host.strip().replaceAll("[^A-Za-z0-9.-]", "-");
    return host.isEmpty() ? "worker" : host.substring(0, Math.min(host.length(), 100));
  }

  private static Optional<String> nonBlank(String s) {
    return s == null || s.isBlank() ? Optional.empty() : Optional.of(s.strip());
  }

  /**
   * The identity plugin generation {@code n} registers under: the worker id itself for the first,
   * {@code <id>.g<n>} after it. A new generation is a second registration next to the old one
   * (which winds down on its own stream), so it needs an id of its own.
   */
  public WorkerIdentity forGeneration(int n, String imageDigest) {
    return new WorkerIdentity(
        n <= 1 ? workerId : workerId + ".g" + n, workloadIdentity, imageDigest);
  }
}
