package dev.phrony.worker.testkit;

import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The calls in flight of each session, in dispatch order, for a session's cancel ({@link
 * LocalRuntime#cancelSession}); calls without a session are not kept. Guarded by the {@link
 * Registry}'s lock.
 */
final class SessionIndex {
  private final HashMap<String, Set<String>> bySession = new HashMap<>();

  void add(Call call) {
    if (!call.sessionId().isEmpty()) {
      bySession.computeIfAbsent(call.sessionId(), s -> new LinkedHashSet<>()).add(call.callId());
    }
  }

  void remove(Call call) {
    Set<String> ids = bySession.get(call.sessionId());
    if (ids != null && ids.remove(call.callId()) && ids.isEmpty()) {
      bySession.remove(call.sessionId());
    }
  }

  /** The call ids of {@code sessionId} in flight, oldest first. */
  List<String> callIds(String sessionId) {
    Set<String> ids = bySession.get(sessionId);
    return ids == null ? List.of() : List.copyOf(ids);
  }
}
