package dev.phrony.worker.dev;

import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.worker.agent.DevAgent;
import dev.phrony.worker.agent.DevAgents;
import dev.phrony.worker.ops.WorkerMetrics;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.plugin.LoadProblem;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Event;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.WorkerView;
import dev.phrony.worker.time.ExecutorScheduler;
import dev.phrony.worker.work.WorkClient;
import dev.phrony.worker.work.WorkOptions;
import dev.phrony.worker.work.WorkerIdentity;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A whole Phrony system in one process, for development: an embedded {@link LocalRuntime} on
 * loopback, a host (a {@link WorkClient}) serving the plugins against it, and the {@link
 * ControlServer} through which {@code phrony-worker call} (or curl) submits tool calls as an agent
 * session would. Without a host, workers in any language connect to the runtime.
 *
 * <pre>{@code
 * try (DevServer dev = DevServer.start(options)) {
 *   out.print(dev.banner());
 *   dev.showEvents(out);   // tool_call / tool_result / worker lines from now on
 *   ...                    // until a signal
 *   dev.stop();            // drain the host, then stop the runtime and the control API
 * }
 * }</pre>
 */
public final class DevServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(DevServer.class);

  /** How long startup waits for the host to register before showing the banner anyway. */
  private static final Duration REGISTER_WAIT = Duration.ofSeconds(30);

  /**
   * The runtime's bound on a running call when the control API bounds it by a deadline: a backstop
   * only ({@link CallService} ends calls at their deadline or the dispatch wait).
   */
  /**
   * The embedded runtime's lease: short, so that after a rebuild that changes a descriptor the old
   * plugin generation leaves routing within seconds (a rebuild with the same descriptors takes
   * effect at once).
   */
  static final Duration DEV_LEASE_TTL = Duration.ofSeconds(4);

  private static final Duration EXECUTION_BACKSTOP = Duration.ofHours(1);

  /** How long stopping waits for other workers' streams before cutting them. */
  private static final Duration RUNTIME_STOP_GRACE = Duration.ofSeconds(2);

  /**
   * What to run.
   *
   * @param runtimePort the Work stream's loopback port (0: any free port)
   * @param controlPort the control API's loopback port (0: any free port)
   * @param host the host to run against the runtime, or empty for none ({@code --no-host})
   * @param approvals which calls are held for a human's approval before dispatch
   * @param agents the agents whose sessions the runtime's session API runs ({@code --agent})
   */
  public record Options(
      int runtimePort,
      int controlPort,
      Optional<Host> host,
      ApprovalPolicy approvals,
      DevAgents agents) {
    public Options {
      Objects.requireNonNull(host, "host");
      Objects.requireNonNull(approvals, "approvals");
      Objects.requireNonNull(agents, "agents");
    }

    /** Without agents. */
    public Options(
        int runtimePort, int controlPort, Optional<Host> host, ApprovalPolicy approvals) {
      this(runtimePort, controlPort, host, approvals, DevAgents.NONE);
    }

    /** Without approvals or agents. */
    public Options(int runtimePort, int controlPort, Optional<Host> host) {
      this(runtimePort, controlPort, host, ApprovalPolicy.NONE);
    }
  }

  /**
   * The embedded host.
   *
   * @param catalog the handlers it serves
   * @param identity what it registers as
   * @param pluginsDir where the handlers came from (for the banner)
   * @param problems plugins that could not be loaded (for the banner)
   * @param drainTimeout how long stopping waits for its running calls
   */
  public record Host(
      HandlerCatalog catalog,
      WorkerIdentity identity,
      Path pluginsDir,
      List<LoadProblem> problems,
      Duration drainTimeout) {
    public Host {
      Objects.requireNonNull(catalog, "catalog");
      Objects.requireNonNull(identity, "identity");
      problems = List.copyOf(problems);
    }
  }

  /** Which listener could not be bound. */
  public enum Listener {
    RUNTIME,
    CONTROL
  }

  /** A port dev needs is taken by another process. */
  public static final class PortInUseException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final Listener listener;
    private final int port;

    PortInUseException(Listener listener, int port, Throwable cause) {
      super(
          (listener == Listener.RUNTIME ? "the runtime's port " : "the control port ")
              + port
              + " is in use",
          cause);
      this.listener = listener;
      this.port = port;
    }

    public Listener listener() {
      return listener;
    }

    public int port() {
      return port;
    }
  }

  private final Options options;
  private final LocalRuntime runtime;
  private final CallService calls;
  private final ControlServer control;
  private final WorkClient client;
  private final Events events;
  private final SessionEvents sessions;
  private final SessionApi sessionApi;

  /** The handlers whose input schemas check an approval's replacement arguments. */
  private final AtomicReference<Supplier<HandlerCatalog>> served;

  /** The timers of the calls' bounds and of the host. */
  private final ExecutorScheduler timers;

  private volatile boolean registered;
  private boolean stopped;

  private DevServer(
      Options options,
      LocalRuntime runtime,
      CallService calls,
      ControlServer control,
      WorkClient client,
      Events events,
      SessionEvents sessions,
      AtomicReference<Supplier<HandlerCatalog>> served,
      ExecutorScheduler timers,
      SessionApi sessionApi) {
    this.sessionApi = sessionApi;
    this.options = options;
    this.sessions = sessions;
    this.served = served;
    this.timers = timers;
    this.events = events;
    this.runtime = runtime;
    this.calls = calls;
    this.control = control;
    this.client = client;
  }

  /**
   * Starts the runtime, the control API and (unless there is none) the host, and waits for the host
   * to register.
   *
   * @throws PortInUseException when a port is taken
   */
  public static DevServer start(Options options) {
    Objects.requireNonNull(options, "options");
    SessionApi sessionApi = new SessionApi(options.agents(), java.time.InstantSource.system());
    LocalRuntime runtime;
    try {
      runtime =
          LocalRuntime.builder()
              .sessions(sessionApi)
              .unknownMethods(new DevOnlyMethods())
              .port(options.runtimePort())
              .leaseTtl(DEV_LEASE_TTL)
              .executionTimeout(EXECUTION_BACKSTOP)
              .shutdownGrace(RUNTIME_STOP_GRACE)
              .start();
    } catch (UncheckedIOException e) {
      if (hasCause(e, BindException.class)) {
        throw new PortInUseException(Listener.RUNTIME, options.runtimePort(), e);
      }
      throw e;
    }
    ExecutorScheduler timers = new ExecutorScheduler("phrony-dev-timers");
    SessionEvents sessions = new SessionEvents(timers.clock());
    Events events = new Events(sessions);
    runtime.onEvent(events::onEvent);
    CallService calls = null;
    ControlServer control = null;
    WorkClient client = null;
    HandlerCatalog none = HandlerCatalog.of(List.of());
    HandlerCatalog first = options.host().map(Host::catalog).orElse(none);
    AtomicReference<Supplier<HandlerCatalog>> served = new AtomicReference<>(() -> first);
    try {
      calls =
          new CallService(
              runtime,
              runtime.queueWait(),
              timers,
              events,
              options.host().map(Host::problems).orElse(List.of()),
              new Approvals(
                  options.approvals(), timers, Approvals.schemasOf(() -> served.get().get())));
      try {
        control = ControlServer.start(options.controlPort(), calls, runtime, sessions);
      } catch (BindException e) {
        throw new PortInUseException(Listener.CONTROL, options.controlPort(), e);
      } catch (IOException e) {
        throw new UncheckedIOException(
            "could not start the control API on port " + options.controlPort(), e);
      }
      if (options.host().isPresent()) {
        Host host = options.host().get();
        // A developer sees what an unexpected exception was: it is their own handler.
        client =
            new WorkClient(
                WorkOptions.defaults(runtime.target(), host.identity())
                    .withDrainTimeout(host.drainTimeout())
                    .withExposeInternalErrors(true),
                host.catalog(),
                new MemoryOutbox(),
                timers,
                bound -> ThreadLocalRandom.current().nextLong(bound),
                WorkerMetrics.NONE);
      }
      sessionApi.serve(calls);
      DevServer dev =
          new DevServer(
              options,
              runtime,
              calls,
              control,
              client,
              events,
              sessions,
              served,
              timers,
              sessionApi);
      dev.startHost();
      return dev;
    } catch (RuntimeException e) {
      if (client != null) {
        client.close();
      }
      if (control != null) {
        control.close();
      }
      if (calls != null) {
        calls.close();
      }
      runtime.close();
      timers.close();
      throw e;
    }
  }

  private void startHost() {
    if (client == null) {
      return;
    }
    String id = options.host().orElseThrow().identity().workerId();
    CompletableFuture<Void> done = new CompletableFuture<>();
    LocalRuntime.Subscription registration =
        runtime.onEvent(
            e -> {
              WorkServerMsg m = e.serverMsg();
              if (m != null
                  && m.getBodyCase() == WorkServerMsg.BodyCase.REGISTERED
                  && id.equals(m.getRegistered().getWorkerId())) {
                done.complete(null);
              }
            });
    try {
      client.start();
      done.get(REGISTER_WAIT.toMillis(), TimeUnit.MILLISECONDS);
      registered = true;
    } catch (TimeoutException e) {
      log.warn("the host did not register within {} s; serving anyway", REGISTER_WAIT.toSeconds());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    } finally {
      registration.close();
    }
  }

  /** From now on, print each call and each worker coming and going on {@code out}. */
  public void showEvents(PrintWriter out) {
    Console console = new Console(out, Clock.systemDefaultZone(), control.url());
    events.console = console;
    sessionApi.showOn(console::session);
  }

  /**
   * Where the handlers served now come from, whose input schemas check the replacement arguments of
   * an approval (after a plugin reload: the reloaded ones). By default the handlers the host
   * started with.
   */
  public void schemasFrom(Supplier<HandlerCatalog> catalog) {
    served.set(Objects.requireNonNull(catalog, "catalog"));
  }

  /**
   * Where the control API's {@code GET /handlers} comes from: {@code run}'s {@code /handlers} JSON
   * of what the host serves now, so {@code list-handlers --worker} works against dev too.
   */
  public void handlersFrom(Supplier<String> json) {
    control.handlersFrom(json);
  }

  /**
   * The host's plugin generation {@code generation} is registered: every older registration of the
   * host leaves routing now, not once its lease lapses (as the real runtime would have it), so the
   * next call reaches the new code and a key just removed is answered {@code no_handler} at once.
   * dev owns its runtime: nothing else routes to the old ones. Does nothing until that generation
   * is registered (its reload may have outrun the registration): the old ones then lapse as usual.
   */
  public void retireOlderThan(int generation) {
    String base = options.host().orElseThrow().identity().workerId();
    String current = options.host().get().identity().forGeneration(generation, "").workerId();
    if (runtime.worker(current).filter(WorkerView::connected).isEmpty()) {
      return;
    }
    for (WorkerView w : runtime.workers()) {
      String id = w.workerId();
      if (!id.equals(current)
          && (id.equals(base) || id.matches(Pattern.quote(base) + "\\.g\\d+"))) {
        runtime.retire(id);
      }
    }
  }

  /** What is running and how to use it, for the terminal. */
  public String banner() {
    StringBuilder b = new StringBuilder();
    b.append("phrony-worker dev: a local Phrony runtime")
        .append(client != null ? ", a worker" : "")
        .append(" and a control API\n\n");
    b.append(
        String.format(
            Locale.ROOT,
            "  runtime  %-24s  the Work stream (workers: --runtime %s)%n",
            runtime.target(),
            runtime.target()));
    b.append(
        String.format(
            Locale.ROOT,
            "  control  %-24s  %s%n",
            control.url(),
            "JSON: POST /v1/calls, GET /v1/workers, GET /v1/queues, GET /v1/approvals"));
    for (DevAgent a : options.agents().all()) {
      b.append(
          String.format(
              Locale.ROOT,
              "  agent    %-24s  sessions: RunSessionInteractive on %s (%d scripted turn%s, %d"
                  + " polic%s)%n",
              a.namespace() + "/" + a.name() + "@" + a.version(),
              runtime.target(),
              a.script().turns().size(),
              a.script().turns().size() == 1 ? "" : "s",
              a.policies().rules().size(),
              a.policies().rules().size() == 1 ? "y" : "ies"));
    }
    ApprovalPolicy approvals = options.approvals();
    if (!approvals.isEmpty()) {
      b.append(
          String.format(
              Locale.ROOT,
              "  approval %s held until approved%s%n",
              String.join(
                  ", ", approvals.rules().stream().map(ApprovalPolicy.Rule::pattern).toList()),
              approvals
                  .timeout()
                  .map(t -> " (they expire after " + CallService.human(t) + ")")
                  .orElse("")));
    }
    Optional<ExampleCall> example = Optional.empty();
    if (options.host().isPresent()) {
      Host host = options.host().get();
      List<HandlerCatalog.Entry> entries = host.catalog().entries();
      b.append(
          String.format(
              Locale.ROOT,
              "  worker   %s%s serving %d handler%s from %s%n",
              host.identity().workerId(),
              registered ? "" : " (not registered yet)",
              entries.size(),
              entries.size() == 1 ? "" : "s",
              host.pluginsDir()));
      int width = entries.stream().mapToInt(e -> e.key().length()).max().orElse(0);
      for (var e : entries) {
        String description = e.descriptor().description();
        b.append("             ")
            .append(
                description.isBlank()
                    ? e.key()
                    : String.format(Locale.ROOT, "%-" + width + "s  %s", e.key(), description))
            .append('\n');
      }
      for (LoadProblem p : host.problems()) {
        b.append("  problem  ").append(p.plugin()).append(": ").append(p.reason()).append('\n');
      }
      for (String p :
          approvals.unmatched(entries.stream().map(HandlerCatalog.Entry::key).toList())) {
        b.append("  warning  require-approval ")
            .append(p)
            .append(
                " matches no handler served"
                    + " here (keys are tool@version, e.g. echo@default)\n");
      }
      example = ExampleCall.pick(host.catalog());
    } else {
      b.append("  worker   none (--no-host): connect one to the runtime, e.g.\n")
          .append("             bin/phrony-worker run --runtime ")
          .append(runtime.target())
          .append(" --plugins DIR\n");
    }
    b.append('\n');
    String call =
        example
            .map(x -> x.commandLine(runtime.target()))
            .orElse(new ExampleCall("TOOL@VERSION", "{}").commandLine(runtime.target()));
    b.append("Call a tool from another terminal:\n\n  ").append(call).append("\n\n");
    b.append("Calls are shown below as they happen. Ctrl-C stops.\n");
    return b.toString();
  }

  public String runtimeTarget() {
    return runtime.target();
  }

  public String controlUrl() {
    return control.url();
  }

  /** The embedded runtime (for tests and views). */
  public LocalRuntime runtime() {
    return runtime;
  }

  /** The embedded host, if there is one. */
  public Optional<WorkClient> host() {
    return Optional.ofNullable(client);
  }

  /**
   * Stops gracefully: new calls are refused, the host drains (running calls finish for up to its
   * drain timeout, their results acknowledged), then the runtime stops (other workers' streams end,
   * calls still waiting end {@code shutdown}) and the control API closes.
   */
  public void stop() throws InterruptedException {
    synchronized (this) {
      if (stopped) {
        return;
      }
      stopped = true;
    }
    log.info("dev stopping");
    control.refuseNewCalls();
    sessionApi.cancelAll(); // their calls end now, as the runtime's would on its shutdown
    calls.refuseNewCalls();
    calls.approvals().close(); // calls held for approval end now: they will never run
    try {
      if (client != null) {
        client.drain();
      }
    } finally {
      runtime.stop();
      sessions.close(); // followed streams end, so the control API need not wait for them
      control.stop(Duration.ofSeconds(1));
      calls.close();
      runtime.close();
      timers.close();
      log.info("dev stopped");
    }
  }

  /** Stops at once: the host's stream is cut, calls in flight end without an answer. */
  @Override
  public void close() {
    synchronized (this) {
      if (stopped) {
        return;
      }
      stopped = true;
    }
    sessionApi.cancelAll();
    if (client != null) {
      client.close();
    }
    sessions.close();
    control.close();
    runtime.close();
    calls.close();
    timers.close();
  }

  /**
   * Calls, passed on to the session streams; calls and runtime events, passed on to the console
   * once there is one.
   */
  private static final class Events implements CallService.Listener {
    final SessionEvents sessions;
    volatile Console console;

    Events(SessionEvents sessions) {
      this.sessions = sessions;
    }

    @Override
    public void submitted(Call call) {
      sessions.submitted(call);
      Console c = console;
      if (c != null) {
        c.submitted(call);
      }
    }

    @Override
    public void approvalRequired(Approvals.Pending pending) {
      sessions.approvalRequired(pending);
      Console c = console;
      if (c != null) {
        c.approvalRequired(pending);
      }
    }

    @Override
    public void completed(CallService.Completed completed) {
      sessions.completed(completed);
      Console c = console;
      if (c != null) {
        c.completed(completed);
      }
    }

    void onEvent(Event e) {
      Console c = console;
      if (c != null) {
        c.onEvent(e);
      }
    }
  }

  private static boolean hasCause(Throwable t, Class<? extends Throwable> type) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (type.isInstance(c)) {
        return true;
      }
    }
    return false;
  }
}
