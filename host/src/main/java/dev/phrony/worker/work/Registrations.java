package dev.phrony.worker.work;

import dev.phrony.worker.ops.ReconnectReason;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.plugin.CatalogChange;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.time.Scheduler;
import dev.phrony.worker.work.Rescues.Kill;
import dev.phrony.worker.work.Rescues.Rescue;
import io.grpc.Status;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The registrations this worker holds with the runtime, and their one owner: which streams are open
 * and what each is for, when one opens and when one closes. Reconnect, reload (a new plugin
 * generation), drain (leaving routing) and the rescue after a kill all go through here. It runs in
 * the dispatcher's context, the serialized place that owns every call, so each decision about a
 * stream sees the calls exactly as they are (docs/architecture.md).
 *
 * <p>Each open stream has a {@link Role}:
 *
 * <ul>
 *   <li>{@code SERVING}: the current plugin generation's registration; heartbeats, takes calls.
 *   <li>{@code RETIRING}: an older generation's, out of routing; closed once its calls are done.
 *   <li>{@code RESCUE}: took over a killed stream's calls under an id of its own, advertising no
 *       handlers (so the runtime routes it nothing); closed once those calls are answered and
 *       acked.
 *   <li>{@code EVICTING}: registers a dead entry's id again with no handlers, then closes: that
 *       removes the entry from routing.
 * </ul>
 *
 * <p>A kill (protocol.md rule 9): the runtime ends a registered stream with an error status and
 * keeps the registration as a dead entry, first in routing, that fails every call sent to it. What
 * is done about it, the hand-over, the replacement and the rescue, is {@link Rescues}'.
 */
final class Registrations {
  private static final Logger log = LoggerFactory.getLogger(WorkClient.class);

  /**
   * How long after a lease has lapsed (as far as we can tell) an old stream still waits for invokes
   * in transit.
   */
  static final Duration LAPSE_MARGIN = Duration.ofMillis(250);

  enum Role {
    SERVING,
    RETIRING,
    RESCUE,
    EVICTING
  }

  /**
   * One plugin generation: its number (1 first), the identity it registers under ({@link
   * WorkerIdentity#forGeneration}) and the handlers it advertises.
   */
  record Generation(int number, WorkerIdentity identity, HandlerSet handlers) {}

  /** What the registrations need of the transport. */
  interface Streams {
    /** A session for a registration of {@code identity} advertising {@code handlers}; not open. */
    WorkSession create(HandlerSet handlers, WorkerIdentity identity);

    /**
     * Opens {@code s}'s gRPC stream and sends its register with {@code inFlight}, after {@code
     * first}'s if not null; a failure ends {@code s} at once.
     */
    void open(WorkSession s, Set<String> inFlight, WorkSession.HandOver first);

    /** Ends {@code s} from our side once the connection leaves READY (a runtime going away). */
    void watch(WorkSession s);
  }

  /** An open stream's generation and role. */
  private record Open(int generation, Role role) {}

  private final WorkOptions options;
  private final Dispatcher dispatcher;
  private final Streams streams;
  private final Scheduler scheduler;
  private final Reconnects reconnects;
  private final WorkerMetrics metrics;

  /** What a rescue or an eviction advertises: nothing, so the runtime routes it no call. */
  private final HandlerSet noHandlers;

  private final Rescues rescues;

  private final Map<WorkSession, Open> open = new ConcurrentHashMap<>();
  private final AtomicInteger servingEnds = new AtomicInteger();

  // ---- in the context ----
  private final List<WorkClient.Handover> handovers = new ArrayList<>();
  private Scheduler.Handle reconnect = Scheduler.NONE;

  // ---- written in the context, read anywhere ----
  private volatile WorkSession session;
  private volatile Generation generation;
  private volatile boolean leaving;
  private volatile boolean stopping;
  private volatile String lastEnd;

  Registrations(
      WorkOptions options,
      Dispatcher dispatcher,
      Streams streams,
      Scheduler scheduler,
      Reconnects reconnects,
      WorkerMetrics metrics) {
    this.options = options;
    this.dispatcher = dispatcher;
    this.streams = streams;
    this.scheduler = scheduler;
    this.reconnects = reconnects;
    this.metrics = metrics;
    this.noHandlers = dispatcher.handlerSet(HandlerCatalog.of(List.of()));
    this.rescues = new Rescues(this, options, dispatcher, streams, metrics, noHandlers);
    this.generation =
        new Generation(
            options.generation(),
            options
                .identity()
                .forGeneration(options.generation(), options.identity().imageDigest()),
            dispatcher.initialHandlers());
  }

  /** Opens the first serving stream. */
  void start() {
    dispatcher.execute(() -> openServing(null, null));
  }

  // ---- opening ----

  /**
   * Opens the current generation's stream, listing the calls the dispatcher holds that no open
   * stream answers for (rules 2, 3). {@code kill}: it replaces that killed stream's dead entry,
   * after moving {@code rescue}'s calls off it if not null.
   */
  private void openServing(Kill kill, Rescue rescue) {
    if (stopping || leaving) {
      rescues.open(rescue);
      return;
    }
    Generation g = generation;
    WorkSession s = streams.create(g.handlers(), g.identity());
    if (!reconnects.down()) {
      log.info(
          "connecting to {} (stream {}, as {})", options.target(), s.id(), g.identity().workerId());
    }
    session = s;
    track(s, g.number(), Role.SERVING, kill);
    streams.open(s, dispatcher.inFlightIds(), rescues.handOver(s, rescue));
  }

  /** {@code s}, a stream for {@code role} of the current generation, opens (see {@link #track}). */
  void track(WorkSession s, Role role, Kill kill) {
    track(s, generation.number(), role, kill);
  }

  private void track(WorkSession s, int gen, Role role, Kill kill) {
    open.put(s, new Open(gen, role));
    if (role == Role.SERVING) {
      s.onKill((killed, status, calls) -> killed(killed, status, calls, System.nanoTime()));
    }
    s.registration().thenRun(() -> dispatcher.execute(() -> registered(s, kill)));
    s.ended().whenComplete((end, t) -> dispatcher.execute(() -> ended(s, end)));
  }

  /** In the context: {@code s} is registered. */
  private void registered(WorkSession s, Kill kill) {
    Open o = open.get(s);
    if (o == null || !s.live()) {
      return;
    }
    switch (o.role()) {
      case SERVING -> {
        dispatcher.onRegistered(s, s.advertised(), s.heartbeat().ttl());
        reconnects.registered();
        streams.watch(s);
        retireOlderThan(o.generation());
      }
      case RESCUE -> {
        streams.watch(s);
        boundByDrainTimeout(s, "a rescue registration");
        closeWhenIdle(s);
        rescues.registered(s);
      }
      case EVICTING -> s.abort(ReconnectReason.RUNTIME_CLOSED, "dead registration evicted");
      case RETIRING -> {}
    }
    if (kill != null) {
      rescues.contained(kill, s);
    }
  }

  // ---- ends ----

  /**
   * From {@code s}'s gRPC callback, as its end is read (see {@link WorkSession.Killed}): the
   * runtime killed it and keeps a dead entry that fails every call routed to it, so the one that
   * takes calls is replaced in the next task of the context (at once when it is free), ahead of the
   * stream's earlier messages; its end is taken in with them, in order ({@link Rescues#takeIn}).
   */
  private void killed(WorkSession s, Status status, Set<String> calls, long endedNanos) {
    dispatcher.execute(
        () -> {
          Open o = open.get(s);
          if (o == null || o.role() != Role.SERVING || s != session || stopping || leaving) {
            return; // taken in with its end
          }
          Rescue rescue = rescues.early(s, calls);
          countEnd(WorkSession.failure(status), WorkSession.causeOf(status));
          reconnect.cancel();
          openServing(new Kill(s, endedNanos, calls.size()), rescue);
        });
  }

  /** In the context: {@code s} ended, {@code end} says how. */
  private void ended(WorkSession s, WorkSession.End end) {
    Open o = open.remove(s);
    if (o == null) {
      return;
    }
    rescues.ended(s);
    if (rescues.takeIn(s, end, stopping)) { // replaced already: no longer the current stream
      if (o.generation() != generation.number()) {
        dispatcher.dropHandlerSet(s.handlers());
      }
      handoversDone();
      return;
    }
    long endedNanos = System.nanoTime();
    if (!end.registered() || end.kill() == null || stopping) {
      dispatcher.detach(s, end.status());
      afterEnd(s, o, end, null, null);
      return;
    }
    Rescue rescue = rescues.rescue(s, end);
    Kill kill = new Kill(s, endedNanos, rescue == null ? 0 : rescue.handOver().calls().size());
    afterEnd(s, o, end, kill, rescue); // first: every millisecond before the replacement costs
    Rescues.logKill(
        s,
        end,
        kill.handedOver(),
        rescue == null ? null : rescue.stream(),
        "the dead entry replaced at once");
  }

  private void afterEnd(WorkSession s, Open o, WorkSession.End end, Kill kill, Rescue rescue) {
    boolean current = o.role() == Role.SERVING && s == session;
    if (!current && o.role() != Role.RESCUE && o.generation() != generation.number()) {
      dispatcher.dropHandlerSet(s.handlers());
    }
    if (current) {
      servingEnded(end, kill, rescue);
    } else if (kill != null) {
      // An older generation's dead entry, or a rescue's (routed nothing, but kept by the runtime
      // for good): removed at once, its calls moved off it first.
      rescues.evict(s.identity(), kill, rescue);
    }
    if (!current) {
      log.info(
          "stream {} ({}, {} of plugin generation {}) ended: {}",
          s.id(),
          s.identity().workerId(),
          o.role().name().toLowerCase(java.util.Locale.ROOT),
          o.generation(),
          end.reason());
    }
    handoversDone();
  }

  /** The current generation's stream ended: the next one opens, at once after a registered one. */
  private void servingEnded(WorkSession.End end, Kill kill, Rescue rescue) {
    if (stopping) {
      return;
    }
    countEnd(end.reason(), end.cause());
    if (kill != null) {
      replace(kill, rescue);
      return;
    }
    if (leaving) {
      return;
    }
    Duration delay = reconnects.after(end);
    reconnect = scheduler.schedule(() -> dispatcher.execute(() -> openServing(null, null)), delay);
  }

  private void countEnd(String reason, ReconnectReason cause) {
    lastEnd = reason;
    servingEnds.incrementAndGet();
    metrics.reconnect(cause);
  }

  /**
   * The killed serving stream's dead entry goes: a new serving stream, or, leaving, an eviction.
   */
  private void replace(Kill kill, Rescue rescue) {
    if (leaving) {
      rescues.evict(kill.killed().identity(), kill, rescue);
    } else {
      reconnect.cancel();
      openServing(kill, rescue);
    }
  }

  // ---- plugin generations ----

  /** See {@link WorkClient#serve}. */
  WorkClient.Handover serve(HandlerCatalog next, int number, String imageDigest) {
    WorkClient.Handover h =
        new WorkClient.Handover(number, new CompletableFuture<>(), new CompletableFuture<>());
    CompletableFuture<Void> done = h.retired();
    dispatcher.execute(
        () -> {
          Generation now = generation;
          if (!CatalogChange.between(now.handlers().catalog(), next).advertisementChanged()) {
            dispatcher.rebind(now.handlers(), next);
            open.keySet().stream()
                .map(WorkSession::handlers)
                .filter(set -> set != now.handlers() && set != noHandlers)
                .distinct()
                .forEach(set -> dispatcher.rebind(set, next)); // generations winding down
            log.info(
                "plugins reloaded with the same advertisement: generation {} serves on, later"
                    + " calls start on the new handlers",
                now.number());
            h.registered().complete(null);
            done.complete(null);
            return;
          }
          if (number <= now.number()) {
            IllegalArgumentException e =
                new IllegalArgumentException(
                    "generation " + number + " is not newer than " + now.number());
            h.registered().completeExceptionally(e);
            done.completeExceptionally(e);
            return;
          }
          generation =
              new Generation(
                  number,
                  options.identity().forGeneration(number, imageDigest),
                  dispatcher.handlerSet(next));
          handovers.add(h);
          if (stopping || leaving) {
            handoversDone();
            return;
          }
          reconnect.cancel(); // a stream waiting to reconnect opens as the new generation, now
          openServing(null, null); // the old stream serves on until the new one is registered
        });
    return h;
  }

  /** In the context: generation {@code number} is registered; every older stream winds down. */
  private void retireOlderThan(int number) {
    handovers.forEach(
        h -> {
          if (h.number() <= number) {
            h.registered().complete(null);
          }
        });
    open.forEach(
        (s, o) -> {
          if (o.role() == Role.SERVING && o.generation() < number && s.live() && !s.leaving()) {
            retire(s, o);
          }
        });
  }

  /** Takes {@code s} out of routing, then closes it once nothing is left on it. */
  private void retire(WorkSession s, Open o) {
    open.put(s, new Open(o.generation(), Role.RETIRING));
    s.leaveRouting();
    log.info(
        "stream {} ({}) leaves routing for the new plugin generation: its lease lapses by {},"
            + " then it closes once its calls are done (at most {} s)",
        s.id(),
        s.identity().workerId(),
        s.leaseLapses(),
        options.drainTimeout().toSeconds());
    boundByDrainTimeout(s, "a plugin reload");
    lapsed(s).thenRun(() -> closeWhenIdle(s));
  }

  /**
   * A winding-down stream still open after the drain timeout: its calls are cancelled, it closes.
   */
  private void boundByDrainTimeout(WorkSession s, String after) {
    Scheduler.Handle timeout =
        scheduler.schedule(
            () ->
                dispatcher.execute(
                    () -> {
                      if (s.live()) {
                        log.warn(
                            "stream {} outlived the drain timeout after {}: cancelling its calls"
                                + " and closing it (results it still waits an ack for stay held,"
                                + " as after a drain)",
                            s.id(),
                            after);
                        dispatcher.cancelOn(s, "the drain timeout passed after " + after);
                        dispatcher.execute(
                            () ->
                                s.abort(
                                    ReconnectReason.RUNTIME_CLOSED,
                                    "closed: the drain timeout passed after " + after));
                      }
                    }),
            options.drainTimeout());
    s.ended().whenComplete((e, t) -> timeout.cancel());
  }

  /**
   * Completes once the lease of {@code s}, which no longer heartbeats, has surely lapsed (an ack
   * that was on its way moves it on), or once {@code s} ended. Timers of the scheduler, checked in
   * the context.
   */
  private CompletableFuture<Void> lapsed(WorkSession s) {
    CompletableFuture<Void> f = new CompletableFuture<>();
    s.ended().whenComplete((e, t) -> f.complete(null));
    checkLapsed(s, s.leaseLapses(), f);
    return f;
  }

  private void checkLapsed(WorkSession s, Instant lapses, CompletableFuture<Void> f) {
    Duration wait = Duration.between(scheduler.clock().instant(), lapses).plus(LAPSE_MARGIN);
    scheduler.schedule(
        () ->
            dispatcher.execute(
                () -> {
                  Instant now = s.leaseLapses();
                  if (s.live() && now.isAfter(lapses)) {
                    checkLapsed(s, now, f);
                  } else {
                    f.complete(null);
                  }
                }),
        wait);
  }

  private void closeWhenIdle(WorkSession s) {
    dispatcher
        .whenIdleOn(s)
        .thenRun(
            () ->
                dispatcher.execute(
                    () -> {
                      if (s.live()) {
                        log.info(
                            "stream {} ({}): no call left on it, closing it",
                            s.id(),
                            s.identity().workerId());
                        s.abort(ReconnectReason.RUNTIME_CLOSED, "closed: no call left on it");
                      }
                    }));
  }

  /** In the context: completes the hand-overs no older stream holds up any more. */
  private void handoversDone() {
    handovers.removeIf(
        h -> {
          boolean older =
              open.entrySet().stream()
                  .anyMatch(
                      e ->
                          e.getValue().generation() < h.number()
                              && (e.getValue().role() == Role.SERVING
                                  || e.getValue().role() == Role.RETIRING));
          if (!older) {
            h.retired().complete(null);
          }
          return !older;
        });
  }

  // ---- drain and stop ----

  /**
   * In the context: no stream is opened again, and every registered stream that takes calls stops
   * heartbeating; returns when each one's lease has surely lapsed.
   */
  List<CompletableFuture<Void>> leaveRouting() {
    leaving = true;
    reconnect.cancel();
    List<CompletableFuture<Void>> each = new ArrayList<>();
    open.forEach(
        (s, o) -> {
          if (s.registered() && (o.role() == Role.SERVING || o.role() == Role.RETIRING)) {
            s.leaveRouting();
            each.add(lapsed(s));
          }
        });
    return each;
  }

  /** True once no stream is opened again. */
  boolean stopping() {
    return stopping;
  }

  /** No stream is opened again (a drain's end, or close). */
  void stop() {
    stopping = true;
    dispatcher.execute(() -> reconnect.cancel());
  }

  // ---- views, from any thread ----

  /** The streams open now. */
  List<WorkSession> openStreams() {
    return List.copyOf(open.keySet());
  }

  /** How many times the serving stream ended and another was opened. */
  int reconnects() {
    return servingEnds.get();
  }

  /** True once a drain took the worker out of routing. */
  boolean leaving() {
    return leaving;
  }

  /** How the last serving stream ended, or null. */
  String lastEnd() {
    return lastEnd;
  }

  /** The generation served now. */
  int generation() {
    return generation.number();
  }

  /**
   * The stream that takes new calls: the newest generation's once it is registered; until then (a
   * reload's new stream still registering) the older one that still heartbeats.
   */
  WorkSession serving() {
    WorkSession s = session;
    if (s != null && s.registered()) {
      return s;
    }
    for (Map.Entry<WorkSession, Open> e : open.entrySet()) {
      WorkSession o = e.getKey();
      if (e.getValue().role() == Role.SERVING && o.registered() && !o.leaving()) {
        return o;
      }
    }
    return s;
  }
}
