package dev.phrony.worker.work;

import java.util.Collection;
import java.util.HashMap;
import java.util.List;

/**
 * Every call the worker serves, by call id: one {@link CallRecord} from its invoke to its ack (or
 * to the moment it is orphaned or has settled after a cancel). Confined to the dispatcher's
 * context, which the dispatcher's parts share.
 */
final class CallTable {
  private final HashMap<String, CallRecord> byId = new HashMap<>();

  CallRecord get(String callId) {
    return byId.get(callId);
  }

  void put(CallRecord call) {
    byId.put(call.callId, call);
  }

  /** Removes {@code call} if it is still the record of its id. */
  void remove(CallRecord call) {
    byId.remove(call.callId, call);
  }

  /** A copy: callers change the table while they walk it. */
  List<CallRecord> all() {
    return List.copyOf(byId.values());
  }

  Collection<CallRecord> view() {
    return byId.values();
  }

  /** True while a result sent on a stream that is still open waits for its ack there. */
  boolean awaitingAckOnOpenStream() {
    for (CallRecord c : byId.values()) {
      if (c.state == CallRecord.State.SENT && c.owner != null && c.owner.live()) {
        return true;
      }
    }
    return false;
  }
}
