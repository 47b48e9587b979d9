package dev.phrony.worker.work;

import dev.phrony.worker.ops.WorkerMetrics;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the {@link Registrations} do about a kill (protocol.md rule 9), in the dispatcher's context:
 * the runtime ends a registered stream with an error status, most often for a result that crossed
 * its call's cancel on the wire, and keeps the registration as a dead entry, first in routing,
 * failing every call sent to it, with the stream's calls still on it. Registering the same id again
 * would remove the entry but make those calls indeterminate first.
 *
 * <p>So the replacement stream opens at once, with no backoff, and sends two registers back to
 * back: a hand-over ({@code <id>.h<n>}, no handlers) whose {@code in_flight} moves the calls off
 * the dead entry, then the killed id's own, which replaces the entry. The runtime reads one
 * stream's messages in order, so the calls are safe before the entry goes, one round trip sooner
 * than if the hand-over had its own stream: every call routed in that window is lost. For the
 * stream that takes calls this starts on the gRPC callback that reads the end ({@link #early}),
 * ahead of the stream's earlier messages, which may still wait to be handled: the hand-over lists
 * what the stream read (invokes that no ack or cancel read since took off it), and its end is taken
 * in later, in order ({@link #takeIn}). Listing a call the runtime already forgot costs nothing (it
 * ignores an unknown {@code in_flight} id, and acks one it has recorded).
 *
 * <p>Once the hand-over is answered and the end taken in, a rescue ({@code <id>.r<n>}, no handlers,
 * a stream of its own) takes the calls the worker still runs or holds over in its {@code in_flight}
 * and answers them; they cannot stay with the hand-over, whose stream now answers as the killed id.
 * Once the rescue is registered, the hand-over's registration (no stream of its own) is evicted.
 * The rescue is a side registration rather than the next of rotating worker ids: the worker id
 * stays the one the operator and the runtime's views know (rule 2), a new id would leave the dead
 * entry in routing for a whole lease TTL unless it were evicted anyway, and a registration with no
 * handlers is routed nothing, so a rescue that is killed in turn (an answer for a call the runtime
 * forgot in the window) costs no other call.
 */
final class Rescues {
  private static final Logger log = LoggerFactory.getLogger(WorkClient.class);

  /** A killed stream until its dead entry is replaced: for the window's measure and the log. */
  record Kill(WorkSession killed, long endedNanos, int handedOver) {}

  /**
   * A killed stream's calls on their way to {@code stream}, a rescue not opened yet. The stream
   * that replaces the dead entry first moves them off it with {@code handOver}'s register (null:
   * nothing to move); {@code taken} completes with the calls the rescue lists, once the killed
   * stream's end is taken in.
   */
  record Rescue(
      WorkSession stream, WorkSession.HandOver handOver, CompletableFuture<Set<String>> taken) {}

  private final Registrations owner;
  private final WorkOptions options;
  private final Dispatcher dispatcher;
  private final Registrations.Streams streams;
  private final WorkerMetrics metrics;

  /** What a rescue or an eviction advertises: nothing, so the runtime routes it no call. */
  private final HandlerSet noHandlers;

  private int rescues;

  /** Each rescue's hand-over identity, a registration with no stream left: evicted after it. */
  private final Map<WorkSession, WorkerIdentity> phantoms = new HashMap<>();

  /** Streams replaced as soon as their kill was read, until their end is taken in. */
  private final Map<WorkSession, Rescue> early = new HashMap<>();

  Rescues(
      Registrations owner,
      WorkOptions options,
      Dispatcher dispatcher,
      Registrations.Streams streams,
      WorkerMetrics metrics,
      HandlerSet noHandlers) {
    this.owner = owner;
    this.options = options;
    this.dispatcher = dispatcher;
    this.streams = streams;
    this.metrics = metrics;
    this.noHandlers = noHandlers;
  }

  /**
   * Hands {@code killed}'s calls, its end taken in, over to a new rescue registration, not opened
   * yet; null when there is nothing to hand over.
   */
  Rescue rescue(WorkSession killed, WorkSession.End end) {
    int n = rescues + 1;
    WorkSession r = streams.create(noHandlers, id(killed, ".r", n));
    Set<String> handed = dispatcher.handOver(killed, r, end.status());
    if (handed.isEmpty()) {
      return null; // never opened: nothing to close
    }
    rescues = n;
    return taken(r, new WorkSession.HandOver(id(killed, ".h", n), handed), handed);
  }

  /**
   * {@code killed}, the stream that takes calls, was ended by the runtime a moment ago, its end not
   * taken in yet: a rescue for {@code calls} (what it read), whose hand-over the replacement sends.
   */
  Rescue early(WorkSession killed, Set<String> calls) {
    int n = ++rescues;
    Rescue rescue =
        new Rescue(
            streams.create(noHandlers, id(killed, ".r", n)),
            calls.isEmpty() ? null : new WorkSession.HandOver(id(killed, ".h", n), calls),
            new CompletableFuture<>());
    early.put(killed, rescue);
    return rescue;
  }

  /**
   * In order, {@code s}'s end: if it was replaced {@link #early}, its calls the worker still runs
   * or holds go to that rescue now (when not {@code stopping}); returns whether it was.
   */
  boolean takeIn(WorkSession s, WorkSession.End end, boolean stopping) {
    Rescue rescue = early.remove(s);
    if (rescue == null) {
      return false;
    }
    Set<String> handed;
    if (stopping) {
      dispatcher.detach(s, end.status());
      handed = Set.of();
    } else {
      handed = dispatcher.handOver(s, rescue.stream(), end.status());
      if (!handed.isEmpty()) {
        taken(rescue.stream(), rescue.handOver(), handed);
      }
    }
    logKill(s, end, handed.size(), rescue.stream(), "replaced as soon as that was read");
    rescue.taken().complete(handed);
    return true;
  }

  /**
   * Says that {@code s} was killed, how many calls went to {@code rescue} and when it was replaced.
   */
  static void logKill(
      WorkSession s, WorkSession.End end, int handed, WorkSession rescue, String replaced) {
    log.info(
        "stream {} ({}) ended by the runtime ({}), which keeps its registration: {}; {}",
        s.id(),
        s.identity().workerId(),
        end.reason(),
        replaced,
        handed == 0
            ? "nothing to hand over"
            : handed
                + " calls handed over to "
                + rescue.identity().workerId()
                + " (stream "
                + rescue.id()
                + ")");
  }

  /** A side registration's identity: the worker's id and {@code suffix} {@code n}. */
  private WorkerIdentity id(WorkSession killed, String suffix, int n) {
    WorkerIdentity k = killed.identity();
    return new WorkerIdentity(
        options.identity().workerId() + suffix + n, k.workloadIdentity(), k.imageDigest());
  }

  /** {@code r} takes {@code handed} over: tracked, its hand-over's registration evicted after. */
  private Rescue taken(WorkSession r, WorkSession.HandOver handOver, Set<String> handed) {
    owner.track(r, Registrations.Role.RESCUE, null);
    if (handOver != null) {
      phantoms.put(r, handOver.via());
    }
    return new Rescue(r, handOver, CompletableFuture.completedFuture(handed));
  }

  /**
   * The hand-over {@code s} sends before its own register, if {@code rescue} has one; the rescue
   * opens once the runtime has answered it (or {@code s} ended), so that its own register, on
   * another stream, can only reach the runtime after the calls are off the dead entry.
   */
  WorkSession.HandOver handOver(WorkSession s, Rescue rescue) {
    if (rescue == null) {
      return null;
    }
    boolean[] done = {false};
    Runnable once =
        () -> {
          if (!done[0]) {
            done[0] = true;
            open(rescue);
          }
        };
    s.handedOver().thenRun(() -> dispatcher.execute(once));
    s.ended().whenComplete((e, t) -> dispatcher.execute(once));
    if (rescue.handOver() == null) {
      dispatcher.execute(once); // nothing to wait for on the wire
    }
    return rescue.handOver();
  }

  /**
   * Opens {@code rescue}'s stream once the killed stream's end is taken in: its register's {@code
   * in_flight} moves the calls to it. With none left, the hand-over's registration is evicted.
   */
  void open(Rescue rescue) {
    if (rescue == null) {
      return;
    }
    rescue
        .taken()
        .thenAccept(
            calls ->
                dispatcher.execute(
                    () -> {
                      if (!calls.isEmpty()) {
                        streams.open(rescue.stream(), calls, null);
                      } else if (rescue.handOver() != null) {
                        evict(rescue.handOver().via(), null, null);
                      }
                    }));
  }

  /**
   * Registers {@code dead}'s id again with no handlers and closes: its dead entry is gone. {@code
   * rescue}: its calls are moved off the entry first, as by a replacement.
   */
  void evict(WorkerIdentity dead, Kill kill, Rescue rescue) {
    if (owner.stopping()) {
      open(rescue);
      return;
    }
    WorkSession s = streams.create(noHandlers, dead);
    owner.track(s, Registrations.Role.EVICTING, kill);
    streams.open(s, Set.of(), handOver(s, rescue));
  }

  /** {@code r}, a rescue, is registered: its hand-over's registration goes. */
  void registered(WorkSession r) {
    dispatcher.onRescueRegistered(r);
    WorkerIdentity phantom = phantoms.remove(r);
    if (phantom != null) {
      evict(phantom, null, null); // the hand-over's registration, its calls moved on
    }
  }

  /** {@code s} ended: a rescue that never registered leaves its calls where they are. */
  void ended(WorkSession s) {
    phantoms.remove(s);
  }

  /** The dead entry of {@code kill} was replaced by {@code by}: the window is closed. */
  void contained(Kill kill, WorkSession by) {
    Duration window = Duration.ofNanos(System.nanoTime() - kill.endedNanos());
    metrics.streamKilled(kill.killed().kill(), kill.handedOver(), window);
    log.info(
        "dead registration of {} contained by stream {}, {} us after stream {} ended ({}; {}"
            + " calls handed over)",
        kill.killed().identity().workerId(),
        by.id(),
        window.toNanos() / 1_000,
        kill.killed().id(),
        kill.killed().kill() == null ? "?" : kill.killed().kill().label(),
        kill.handedOver());
  }
}
