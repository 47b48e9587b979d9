package dev.phrony.worker.testkit;

import dev.phrony.runtime.v1.WorkHandlerAdvertisement;
import dev.phrony.runtime.v1.WorkRegister;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * One registration of the {@link Registry}: a worker id bound to the stream it registered on, its
 * lease, and a slot per handler it advertised. Guarded by the registry's lock, like the rest of it.
 */
final class RegisteredWorker {
  final String id;
  final WorkerStream stream;
  final WorkRegister register;
  final Map<String, Slot> handlers = new LinkedHashMap<>();
  final Instant registeredAt;
  Instant lease;

  /** Out of routing for good ({@link LocalRuntime#retire}): its heartbeats renew nothing. */
  boolean retired;

  /** The concurrency one handler advertised, and how much of it is leased. */
  static final class Slot {
    final WorkHandlerAdvertisement ad;
    final int max;
    int busy;

    /** Invokes sent for this handler on this registration. */
    long invoked;

    Slot(WorkHandlerAdvertisement ad) {
      this.ad = ad;
      long advertised = Integer.toUnsignedLong(ad.getMaxConcurrency()); // uint32 on the wire
      this.max = advertised == 0 ? 1 : (int) Math.min(advertised, Integer.MAX_VALUE);
    }
  }

  RegisteredWorker(String id, WorkerStream stream, WorkRegister register, Instant now) {
    this.id = id;
    this.stream = stream;
    this.register = register;
    this.registeredAt = now;
  }

  /** False once retired or its lease has lapsed: new calls skip it. */
  boolean routable(Instant now) {
    return !retired && !now.isAfter(lease);
  }

  /** Its slot for {@code key} if it has room for one more call, else null. */
  Slot freeSlot(String key) {
    Slot slot = handlers.get(key);
    return slot != null && slot.busy < slot.max ? slot : null;
  }

  /** What {@link LocalRuntime#workers} shows of it, {@code leased} calls running on it. */
  WorkerView view(Instant now, int leased) {
    List<WorkerView.HandlerView> views = new ArrayList<>(handlers.size());
    handlers.forEach(
        (key, s) ->
            views.add(
                new WorkerView.HandlerView(
                    key,
                    s.ad.getTool(),
                    s.ad.getVersion(),
                    s.ad.getContractVersion(),
                    s.ad.getDescriptorHash(),
                    s.max,
                    s.busy,
                    s.invoked)));
    return new WorkerView(
        id,
        stream.streamId(),
        register.getWorkloadIdentity(),
        register.getImageDigest(),
        views,
        registeredAt,
        lease,
        !routable(now),
        stream.isOpen(),
        leased);
  }

  /** Its handlers for the log: {@code tool@version xN, ...}. */
  String describeHandlers() {
    return handlers.entrySet().stream()
        .map(e -> e.getKey() + " x" + e.getValue().max)
        .collect(Collectors.joining(", "));
  }
}
