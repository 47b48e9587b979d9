package dev.phrony.worker.work;

import java.util.Collection;
import java.util.HashMap;
import java.util.List;

/**
 * Every call the worker serves, by call id: one {@link Call} from its invoke to its ack (or to
 * the moment it is orphaned or has settled after a cancel). Confined to the dispatcher's context,
 * which the dispatcher's parts share.
 */
final class CallTable {
  private final HashMap<String, Call> byId = new HashMap<>();

  Call get(String callId) {
    return byId.get(callId);
  }

  void put(Call call) {
    byId.put(call.callId, call);
  }

  /** Removes {@code call} if it is still the record of its id. */
  void remove(Call call) {
    byId.remove(call.callId, call);
  }

  /** A copy: callers change the table while they walk it. */
  List<Call> all() {
    return List.copyOf(byId.values());
  }

  Collection<Call> view() {
    return byId.values();
  }

  /** True while a result sent on a stream that is still open waits for its ack there. */
  boolean awaitingAckOnOpenStream() {
    for (Call c : byId.values()) {
      if (c.state == Call.State.SENT && c.owner != null && c.owner.live()) {
        return true;
      }
    }
    return false;
  }
}
