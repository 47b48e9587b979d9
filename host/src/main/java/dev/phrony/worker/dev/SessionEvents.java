package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.testkit.Call;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Each session's tool events in order, as a session attached over the runtime's interactive RPC
 * sees them: {@code tool_call}, {@code approval_required}, {@code tool_result}. The control API
 * serves them as newline-delimited JSON ({@code GET /v1/sessions/{id}/events}), so a test, a script
 * or a UI can follow a session; {@code call --session ID --follow} prints them.
 *
 * <p>Each event is numbered within its session from 1 ({@code seq}), so a reader can ask for the
 * events after the last one it saw. Bounded: the latest {@value #MAX_EVENTS} events of the latest
 * {@value #MAX_SESSIONS} sessions (a followed session is never dropped).
 *
 * <p>One owner: events are appended, and handed to followers, under this object's lock, so every
 * follower sees a session's events in the one order they were appended.
 */
public final class SessionEvents implements CallService.Listener, AutoCloseable {
  static final int MAX_SESSIONS = 1000;
  static final int MAX_EVENTS = 1000;

  /** The three kinds of event, spelled as the runtime's interactive messages. */
  public static final String TOOL_CALL = "tool_call";

  public static final String APPROVAL_REQUIRED = "approval_required";
  public static final String TOOL_RESULT = "tool_result";

  /**
   * One event.
   *
   * @param seq its number within its session, from 1
   * @param json the event as one line of JSON (no newline): {@code type}, {@code seq}, {@code
   *     session_id}, {@code at}, then the fields of its kind
   */
  public record Event(String sessionId, long seq, String type, String json) {}

  /** The events of one session after a point, then each new one as it happens. */
  public interface Follower extends AutoCloseable {
    /** Returned by {@link #next(Duration)} when no event came within the wait. */
    Event IDLE = new Event("", 0, "", "");

    /** The next event, waiting for it; null once dev stops. */
    default Event next() throws InterruptedException {
      Event e;
      while ((e = next(Duration.ofDays(1))) == IDLE) {
        // wait on
      }
      return e;
    }

    /**
     * The next event, waiting up to {@code wait}: {@link #IDLE} if none came; null once dev stops.
     */
    Event next(Duration wait) throws InterruptedException;

    /** Stops following. */
    @Override
    void close();
  }

  /** Marks the end of a follower's events. */
  private static final Event END = new Event("", 0, "", "");

  private static final class Session {
    long seq;
    final ArrayDeque<Event> events = new ArrayDeque<>();
    final List<BlockingQueue<Event>> followers = new ArrayList<>();
  }

  private final InstantSource clock;

  /** By session id, least recently appended first. Guarded by {@code this}. */
  private final Map<String, Session> sessions =
      new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Session> eldest) {
          return size() > MAX_SESSIONS && eldest.getValue().followers.isEmpty();
        }
      };

  private boolean closed;

  public SessionEvents(InstantSource clock) {
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  @Override
  public void submitted(Call call) {
    append(call.sessionId(), TOOL_CALL, CallReply.callFields(call, true));
  }

  @Override
  public void approvalRequired(Approvals.Pending pending) {
    append(pending.call().sessionId(), APPROVAL_REQUIRED, pending.toJson());
  }

  @Override
  public void completed(CallService.Completed completed) {
    append(completed.call().sessionId(), TOOL_RESULT, CallReply.toJson(completed));
  }

  private void append(String sessionId, String type, ObjectNode fields) {
    ObjectNode o = Json.object();
    o.put("type", type);
    o.put("seq", 0); // set below, in order
    o.put("session_id", sessionId);
    o.put("at", clock.instant().toString());
    fields
        .properties()
        .forEach(
            f -> {
              if (!o.has(f.getKey())) {
                o.set(f.getKey(), f.getValue());
              }
            });
    synchronized (this) {
      Session s = sessions.computeIfAbsent(sessionId, id -> new Session());
      long seq = ++s.seq;
      o.put("seq", seq);
      Event e = new Event(sessionId, seq, type, new String(Json.bytes(o), StandardCharsets.UTF_8));
      s.events.addLast(e);
      if (s.events.size() > MAX_EVENTS) {
        s.events.removeFirst();
      }
      s.followers.forEach(f -> f.add(e));
    }
  }

  /** The events of {@code sessionId} numbered above {@code after}; empty for an unknown session. */
  public synchronized Optional<List<Event>> events(String sessionId, long after) {
    Session s = sessions.get(sessionId);
    return s == null
        ? Optional.empty()
        : Optional.of(s.events.stream().filter(e -> e.seq() > after).toList());
  }

  /** The ids of the sessions kept, most recently active last. */
  public synchronized List<String> sessions() {
    return List.copyOf(sessions.keySet());
  }

  /**
   * Follows {@code sessionId} (which need not have started yet): the events numbered above {@code
   * after}, then each new one.
   */
  public Follower follow(String sessionId, long after) {
    BlockingQueue<Event> queue = new LinkedBlockingQueue<>();
    Session s = null;
    synchronized (this) {
      if (closed) {
        queue.add(END);
      } else {
        s = sessions.computeIfAbsent(sessionId, id -> new Session());
        s.events.stream().filter(e -> e.seq() > after).forEach(queue::add);
        s.followers.add(queue);
      }
    }
    Session followed = s;
    return new Follower() {
      @Override
      public Event next(Duration wait) throws InterruptedException {
        Event e = queue.poll(wait.toNanos(), TimeUnit.NANOSECONDS);
        if (e == null) {
          return IDLE;
        }
        if (e == END) {
          queue.add(END); // stays ended
          return null;
        }
        return e;
      }

      @Override
      public void close() {
        if (followed != null) {
          synchronized (SessionEvents.this) {
            followed.followers.remove(queue);
          }
        }
      }
    };
  }

  /** Ends every follower (dev is stopping); later followers end at once. */
  @Override
  public synchronized void close() {
    closed = true;
    sessions
        .values()
        .forEach(
            s -> {
              s.followers.forEach(f -> f.add(END));
              s.followers.clear();
            });
  }
}
