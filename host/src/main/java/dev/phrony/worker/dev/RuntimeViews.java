package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.testkit.WorkerView;
import java.util.List;
import java.util.Map;

/** The embedded runtime's state as the control API shows it: registrations, and waiting calls. */
final class RuntimeViews {
  private RuntimeViews() {}

  /** {@code GET /v1/workers}: each registration, its lease, and its handlers' slots. */
  static ObjectNode workers(List<WorkerView> workers) {
    ObjectNode o = Json.object();
    ArrayNode list = o.putArray("workers");
    for (WorkerView w : workers) {
      ObjectNode j = list.addObject();
      j.put("worker_id", w.workerId());
      j.put("stream_id", w.streamId());
      j.put("connected", w.connected());
      j.put("lease_expired", w.leaseExpired());
      j.put("registered_at", w.registeredAt().toString());
      j.put("lease_expires_at", w.leaseExpiresAt().toString());
      j.put("in_flight", w.inFlight());
      j.put("workload_identity", w.workloadIdentity());
      j.put("image_digest", w.imageDigest());
      ArrayNode handlers = j.putArray("handlers");
      for (WorkerView.HandlerView h : w.handlers()) {
        ObjectNode hj = handlers.addObject();
        hj.put("key", h.key());
        hj.put("tool", h.tool());
        hj.put("version", h.version());
        hj.put("contract_version", h.contractVersion());
        hj.put("max_concurrency", h.maxConcurrency());
        hj.put("busy", h.busy());
        hj.put("invoked", h.invoked());
        hj.put("descriptor_hash", h.descriptorHash());
      }
    }
    return o;
  }

  /** {@code GET /v1/queues}: calls in flight, and those waiting for a slot by key. */
  static ObjectNode queues(int inFlight, Map<String, Integer> waiting) {
    ObjectNode o = Json.object();
    o.put("in_flight", inFlight);
    ArrayNode list = o.putArray("queues");
    waiting.entrySet().stream()
        .sorted(Map.Entry.comparingByKey())
        .forEach(
            e -> {
              ObjectNode q = list.addObject();
              q.put("key", e.getKey());
              q.put("waiting", e.getValue());
            });
    return o;
  }
}
