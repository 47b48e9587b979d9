package dev.phrony.worker.dev;

import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.worker.call.ArgsCheck;
import dev.phrony.worker.plugin.LoadProblem;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Event;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.testkit.WorkerView;
import dev.phrony.worker.time.Scheduler;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

/**
 * Submits tool calls to the embedded {@link LocalRuntime} as an agent session would, and bounds
 * each one as the runtime bounds a session's call: by its deadline when it has one, else by the
 * runtime's dispatch wait. When the bound passes the runtime gives up on the call (it forgets it
 * and sends {@code cancel} to the worker running it) and the outcome says what it was waiting for,
 * as the runtime's error would: a handler, a free slot, or the worker's answer.
 *
 * <p>A call its {@link Approvals} gate names is held before dispatch until a human answers it:
 * approved, it is dispatched (with the replacement arguments, if any), and its deadline counts from
 * then, as the runtime pauses a session's clock while it waits for a human; denied or expired, it
 * ends with the tool error {@value Approvals#DENIED} or {@value Approvals#EXPIRED} and no worker
 * ever sees it.
 *
 * <p>Every call is reported to the {@link Listener} when it is submitted, when it is held, and when
 * it ends, which is how {@code dev} prints the {@code tool_call}, {@code approval_required} and
 * {@code tool_result} lines and keeps each session's event stream.
 */
public final class CallService implements AutoCloseable {

  /**
   * After a call's deadline the worker's own {@code deadline_exceeded} answer is given this long to
   * arrive before the runtime gives up on the call (and a late answer would be refused).
   */
  static final Duration DEADLINE_GRACE = Duration.ofSeconds(1);

  // The runtime's error texts (errors.go, and Go's context package).
  private static final String NO_HANDLER = "no handler registered for tool";
  private static final String CAPACITY_EXHAUSTED = "tool handler capacity exhausted";
  private static final String DEADLINE_EXCEEDED = "context deadline exceeded";
  private static final String CANCELLED = "context canceled";
  private static final String SHUTTING_DOWN = "runtime shutting down";

  /** Hears every call submitted through the service. Called on runtime threads: be quick. */
  public interface Listener {
    void submitted(Call call);

    /** The call is held for a human's approval (after {@link #submitted}, before its end). */
    default void approvalRequired(Approvals.Pending pending) {}

    void completed(Completed completed);
  }

  /** What a session hears of its own call, besides the {@link Listener}. */
  public interface Watch {
    /** The call is held for a human's approval. */
    default void held(Approvals.Pending pending) {}

    /**
     * The call goes to the runtime now, as dispatched (its replacement arguments, its deadline); or
     * nobody serves it, and it ends at once with {@code no_handler} (the runtime announces a call
     * before its dispatch fails, too).
     */
    default void dispatching(Call call) {}
  }

  private static final Watch NO_WATCH = new Watch() {};

  /**
   * A call and how it ended.
   *
   * @param hint for a developer, when the outcome has an obvious cause (e.g. which keys are served
   *     when none matched), or null
   */
  public record Completed(Call call, Outcome outcome, String hint) {}

  private record Pending(Call call, Instant submittedAt) {}

  private final LocalRuntime runtime;
  private final Duration dispatchWait;
  private final Scheduler scheduler;
  private final InstantSource clock;
  private final Listener listener;
  private final List<LoadProblem> loadProblems;
  private final LocalRuntime.Subscription invokes;
  private final Approvals approvals;
  private final Map<String, Pending> pending = new ConcurrentHashMap<>();

  /** call id to the worker it was invoked on, for calls in {@link #pending}. */
  private final Map<String, String> invokedOn = new ConcurrentHashMap<>();

  private final Map<String, Call.Sequence> sessions = new ConcurrentHashMap<>();
  private volatile boolean closed;

  /**
   * @param runtime where calls go; its own dispatch bound should be at least {@code dispatchWait}
   *     (it ends waiting calls after its queue wait, this service ends the others)
   * @param dispatchWait the bound on a call without a deadline (the runtime's dispatch wait)
   * @param scheduler the bounds' timers, and the clock of deadlines
   * @param loadProblems plugins of the embedded host that did not load, for hints
   */
  public CallService(
      LocalRuntime runtime,
      Duration dispatchWait,
      Scheduler scheduler,
      Listener listener,
      List<LoadProblem> loadProblems) {
    this(
        runtime,
        dispatchWait,
        scheduler,
        listener,
        loadProblems,
        new Approvals(ApprovalPolicy.NONE, scheduler, key -> ArgsCheck.NONE));
  }

  /**
   * The same, with calls held for approval as {@code approvals} says; closing this service closes
   * it.
   */
  public CallService(
      LocalRuntime runtime,
      Duration dispatchWait,
      Scheduler scheduler,
      Listener listener,
      List<LoadProblem> loadProblems,
      Approvals approvals) {
    this.approvals = Objects.requireNonNull(approvals, "approvals");
    this.loadProblems = List.copyOf(loadProblems);
    this.runtime = Objects.requireNonNull(runtime, "runtime");
    this.dispatchWait = Objects.requireNonNull(dispatchWait, "dispatchWait");
    this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
    this.clock = scheduler.clock();
    this.listener = Objects.requireNonNull(listener, "listener");
    this.invokes = runtime.onEvent(this::onEvent);
  }

  private void onEvent(Event e) {
    WorkServerMsg m = e.serverMsg();
    if (m != null
        && m.getBodyCase() == WorkServerMsg.BodyCase.INVOKE
        && pending.containsKey(e.callId())
        && e.workerId() != null) {
      invokedOn.put(e.callId(), e.workerId());
    }
  }

  /**
   * Dispatches a call; the future always completes normally, at the latest soon after the call's
   * bound.
   *
   * @throws IllegalStateException once the service is closed (dev is stopping)
   */
  public CompletableFuture<Completed> submit(CallRequest request) {
    if (closed) {
      throw new IllegalStateException("dev is shutting down");
    }
    Call call =
        request.sessionId() == null
            ? Call.of(request.tool(), request.version(), request.args())
            : sessions
                .computeIfAbsent(
                    request.sessionId(), s -> Call.sequence(s, Call.LOCAL_AGENT_VERSION))
                .next(request.tool(), request.version(), request.args());
    return submit(call, request.deadline(), true);
  }

  /**
   * Dispatches a session's call as built (its id, turn and side-effect class are the session's),
   * bounded by the dispatch wait; its policies were decided by the session, so the approval gate of
   * {@code --require-approval} does not hold it.
   *
   * @throws IllegalStateException once the service is closed (dev is stopping)
   */
  public CompletableFuture<Completed> submit(Call call) {
    if (closed) {
      throw new IllegalStateException("dev is shutting down");
    }
    return submit(call, null, false);
  }

  /**
   * Dispatches one call of dev's own call sessions ({@code call TOOL ARGS}): as {@link
   * #submit(CallRequest)} does, held by the approval gate of {@code --require-approval} and bounded
   * by {@code deadline} (or the dispatch wait when null), and told to {@code watch}.
   *
   * @throws IllegalStateException once the service is closed (dev is stopping)
   */
  public CompletableFuture<Completed> submit(Call call, Duration deadline, Watch watch) {
    if (closed) {
      throw new IllegalStateException("dev is shutting down");
    }
    return submit(call, deadline, true, watch);
  }

  private CompletableFuture<Completed> submit(Call call, Duration deadline, boolean gated) {
    return submit(call, deadline, gated, NO_WATCH);
  }

  private CompletableFuture<Completed> submit(
      Call call, Duration deadline, boolean gated, Watch watch) {
    Pending p = new Pending(call, clock.instant());
    pending.put(call.callId(), p);
    listener.submitted(call);

    CompletableFuture<Completed> done = new CompletableFuture<>();
    if (!advertisedKeys().contains(call.key())) {
      // Nobody serves it: waiting out the dispatch for "no handler" would only cost the
      // developer the wait (a typo, a plugin that did not load), or a human an approval.
      watch.dispatching(call);
      finish(
          p,
          new Outcome.DispatchError(
              Outcome.Kind.NO_HANDLER,
              NO_HANDLER,
              new Outcome.Trace(call.callId(), null, Duration.ZERO, false)),
          done);
      return done;
    }
    Optional<Approvals.Hold> hold =
        gated
            ? approvals.hold(
                call,
                pending -> {
                  listener.approvalRequired(pending);
                  watch.held(pending);
                })
            : Optional.empty();
    if (hold.isEmpty()) {
      dispatch(p, call, deadline, done, watch);
      return done;
    }
    hold.get()
        .verdict()
        .thenAccept(
            verdict -> {
              switch (verdict) {
                case Approvals.Approved a -> dispatch(p, a.call(), deadline, done, watch);
                case Approvals.Denied d ->
                    finish(
                        p,
                        notRun(
                            p,
                            Approvals.DENIED,
                            "denied by the reviewer"
                                + (d.comment().isBlank() ? "" : ": " + d.comment().strip())),
                        done);
                case Approvals.Expired e ->
                    finish(
                        p,
                        notRun(
                            p, Approvals.EXPIRED, "approval timed out after " + human(e.timeout())),
                        done);
                case Approvals.Withdrawn w ->
                    finish(
                        p,
                        new Outcome.DispatchError(
                            w.kind(),
                            w.kind() == Outcome.Kind.CANCELLED ? CANCELLED : SHUTTING_DOWN,
                            trace(p, null)),
                        done);
              }
            });
    return done;
  }

  /** The tool error of a held call that was not approved: what the model reads. */
  private Outcome notRun(Pending p, String code, String message) {
    return new Outcome.ToolError(code, message + "; the call was not run", false, trace(p, null));
  }

  private Outcome.Trace trace(Pending p, String workerId) {
    return new Outcome.Trace(
        p.call().callId(), workerId, Duration.between(p.submittedAt(), clock.instant()), false);
  }

  /**
   * Dispatches {@code call} and bounds it: by its deadline, counted from now, when it has one, else
   * by the dispatch wait.
   */
  private void dispatch(
      Pending held, Call call, Duration deadline, CompletableFuture<Completed> done, Watch watch) {
    Duration bound = dispatchWait;
    if (deadline != null) {
      call = call.withDeadline(clock.instant().plus(deadline));
      bound = deadline.plus(DEADLINE_GRACE);
    }
    // The call as dispatched (its deadline, replacement arguments) is the one that ends.
    Pending p = new Pending(call, held.submittedAt());
    if (!pending.replace(call.callId(), held, p)) {
      return; // ended meanwhile
    }
    watch.dispatching(call);
    CompletableFuture<Outcome> dispatched = runtime.dispatch(call);
    Scheduler.Handle timer =
        scheduler.schedule(
            () -> {
              Outcome given = givenUp(p);
              // Cancelling makes the runtime forget the call and send cancel to its worker.
              if (!dispatched.isDone() && dispatched.cancel(true)) {
                finish(p, given, done);
              }
            },
            bound);
    dispatched.whenComplete(
        (outcome, failure) -> {
          if (outcome != null) {
            timer.cancel();
            finish(p, outcome, done);
          }
        });
  }

  private void finish(Pending p, Outcome outcome, CompletableFuture<Completed> done) {
    String callId = p.call().callId();
    if (!pending.remove(callId, p)) {
      return;
    }
    invokedOn.remove(callId);
    Completed c = new Completed(p.call(), outcome, hint(p.call(), outcome));
    try {
      listener.completed(c);
    } finally {
      done.complete(c);
    }
  }

  /** The outcome when the bound passes: what the call was still waiting for. */
  private Outcome givenUp(Pending p) {
    String callId = p.call().callId();
    String worker = invokedOn.get(callId);
    Outcome.Trace trace = trace(p, worker);
    if (worker != null) {
      return new Outcome.DispatchError(Outcome.Kind.TIMEOUT, DEADLINE_EXCEEDED, trace);
    }
    boolean advertised = advertisedKeys().contains(p.call().key());
    return new Outcome.DispatchError(
        advertised ? Outcome.Kind.CAPACITY_EXHAUSTED : Outcome.Kind.NO_HANDLER,
        (advertised ? CAPACITY_EXHAUSTED : NO_HANDLER) + "\n" + DEADLINE_EXCEEDED,
        trace);
  }

  private String hint(Call call, Outcome outcome) {
    if (!(outcome instanceof Outcome.DispatchError e)) {
      return null;
    }
    return switch (e.kind()) {
      case NO_HANDLER -> {
        TreeSet<String> keys = advertisedKeys();
        String served =
            keys.isEmpty()
                ? "no worker is registered with the runtime"
                : "no worker serves " + call.key() + "; served: " + String.join(", ", keys);
        yield served + notLoaded(call.tool());
      }
      case CAPACITY_EXHAUSTED -> "every slot of " + call.key() + " stayed busy";
      case TIMEOUT ->
          "the call took longer than "
              + (call.deadlineUnixMs() > 0
                  ? "its deadline"
                  : human(dispatchWait)
                      + " (the runtime's dispatch wait; give a longer deadline with --timeout)");
      default -> null;
    };
  }

  /**
   * The plugins that failed to load, for a tool nobody serves: the one whose problem names the tool
   * (it would have served it), else all of them (one of them may have).
   */
  private String notLoaded(String tool) {
    if (loadProblems.isEmpty()) {
      return "";
    }
    List<LoadProblem> named = loadProblems.stream().filter(p -> p.reason().contains(tool)).toList();
    List<LoadProblem> shown = named.isEmpty() ? loadProblems : named;
    String list =
        shown.stream()
            .map(p -> p.plugin() + " (" + p.reason() + ")")
            .collect(Collectors.joining("; "));
    return named.isEmpty()
        ? "; " + shown.size() + " plugin(s) failed to load and may have served it: " + list
        : "; it would be served by a plugin that failed to load: " + list;
  }

  /** The keys some registration the runtime routes to advertises (a lapsed or retired one not). */
  private TreeSet<String> advertisedKeys() {
    return runtime.workers().stream()
        .filter(w -> !w.leaseExpired())
        .flatMap(w -> w.handlers().stream())
        .map(WorkerView.HandlerView::key)
        .collect(Collectors.toCollection(TreeSet::new));
  }

  /**
   * Cancels a session as the runtime does: its calls are forgotten (they end {@code cancelled}) and
   * the workers running them get {@code cancel}.
   *
   * @return the ids of the calls of that session that were in flight, sorted
   */
  public List<String> cancelSession(String sessionId) {
    List<String> ids =
        pending.values().stream()
            .filter(p -> p.call().sessionId().equals(sessionId))
            .map(p -> p.call().callId())
            .sorted()
            .toList();
    approvals.withdrawSession(sessionId);
    runtime.cancelSession(sessionId);
    return ids;
  }

  /** The approval gate (for the control API). */
  public Approvals approvals() {
    return approvals;
  }

  /** Calls submitted and not yet ended. */
  public int inFlight() {
    return pending.size();
  }

  /** Refuses new calls from now on; the ones in flight still end. */
  public void refuseNewCalls() {
    closed = true;
  }

  /**
   * Refuses new calls, and ends the calls held for approval ({@code shutdown}). Close the runtime
   * first: that ends the calls still in flight.
   */
  @Override
  public void close() {
    closed = true;
    approvals.close();
    invokes.close();
  }

  static String human(Duration d) {
    long ms = d.toMillis();
    return ms >= 60_000 && ms % 60_000 == 0
        ? d.toMinutes() + "m"
        : ms % 1000 == 0 ? d.toSeconds() + "s" : ms + "ms";
  }
}
