package dev.phrony.worker.ops;

import dev.phrony.worker.outbox.DurableOutbox;
import dev.phrony.worker.outbox.OutboxEntry;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.IntSupplier;
import java.util.function.Supplier;

/**
 * {@link WorkerMetrics} on a Micrometer registry (the Prometheus one in {@code run}). Names as
 * Prometheus shows them:
 *
 * <ul>
 *   <li>{@code phrony_worker_invocations_total{tool,outcome,code}}: invokes by {@code tool@version}
 *       and outcome ({@code result}, {@code tool_error}, {@code deadline_exceeded}, {@code
 *       cancelled}, {@code nack} with its {@code code}); {@code tool="unknown"} for keys not served
 *       here
 *   <li>{@code phrony_worker_handler_duration_seconds{tool}}: histogram of handler run time
 *   <li>{@code phrony_worker_slots_in_use{tool}} and {@code phrony_worker_slots_max{tool}}
 *   <li>{@code phrony_worker_slots_in_use_ratio}: slots in use over all handlers divided by the sum
 *       of their max concurrency, 0 to 1 (0 when none is served); no labels: it is the autoscaling
 *       metric of {@code deploy/} (its README has the contract)
 *   <li>{@code phrony_worker_outbox_entries{state}}: held, orphaned and interrupted calls
 *   <li>{@code phrony_worker_outbox_durability_failures_total}: durable writes that failed; {@code
 *       phrony_worker_outbox_waiting_for_disk}: results held back until the disk takes them
 *   <li>{@code phrony_worker_stream_reconnects_total{reason}}: by {@link ReconnectReason}
 *   <li>{@code phrony_worker_stream_kills_total{cause}}: registered streams the runtime ended with
 *       an error status, keeping the registration, by {@link StreamKill}; {@code
 *       phrony_worker_stream_kill_handed_over_calls}: calls handed to a rescue registration per
 *       kill; {@code phrony_worker_stream_kill_window_seconds}: from the kill to the dead entry's
 *       replacement (calls routed there meanwhile fail)
 *   <li>{@code phrony_worker_heartbeat_round_trip_seconds}: heartbeat to heartbeat_ack
 *   <li>{@code phrony_worker_registered}: 1 while registered on a live stream
 *   <li>JVM memory, GC, threads and CPU ({@code jvm_*}, {@code process_cpu_*}, {@code system_*})
 * </ul>
 *
 * <p>Every meter a call touches is made up front ({@link #tool}), so counting a call is an
 * increment on a meter already held. Labels are low-cardinality: never a call or session id.
 */
public final class MicrometerMetrics implements WorkerMetrics, AutoCloseable {
  public static final String INVOCATIONS = "phrony.worker.invocations";
  public static final String HANDLER_DURATION = "phrony.worker.handler.duration";
  public static final String SLOTS_IN_USE = "phrony.worker.slots.in.use";
  public static final String SLOTS_MAX = "phrony.worker.slots.max";
  public static final String SLOTS_IN_USE_RATIO = "phrony.worker.slots.in.use.ratio";
  public static final String OUTBOX_ENTRIES = "phrony.worker.outbox.entries";
  public static final String HANDLERS_RUNAWAY = "phrony.worker.handlers.runaway";
  public static final String HANDLER_RUNAWAYS = "phrony.worker.handler.runaways";
  public static final String OUTBOX_DURABILITY_FAILURES =
      "phrony.worker.outbox.durability.failures";
  public static final String OUTBOX_WAITING_FOR_DISK = "phrony.worker.outbox.waiting.for.disk";
  public static final String OUTBOX_FLUSHES = "phrony.worker.outbox.flushes";

  /** {@code phrony_worker_outbox_disk_free_bytes}. */
  public static final String OUTBOX_DISK_FREE = "phrony.worker.outbox.disk.free";

  public static final String RECONNECTS = "phrony.worker.stream.reconnects";
  public static final String HEARTBEAT_ROUND_TRIP = "phrony.worker.heartbeat.round.trip";
  public static final String STREAM_KILLS = "phrony.worker.stream.kills";
  public static final String KILL_HANDED_OVER = "phrony.worker.stream.kill.handed.over.calls";
  public static final String KILL_WINDOW = "phrony.worker.stream.kill.window";
  public static final String REGISTERED = "phrony.worker.registered";

  /** The {@code tool} label of invokes for a {@code tool@version} this worker does not serve. */
  public static final String UNKNOWN_TOOL = "unknown";

  private static final Duration[] HANDLER_BUCKETS =
      durations(5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000);
  private static final Duration[] KILL_WINDOW_BUCKETS = durations(1, 2, 5, 10, 25, 100, 1_000);
  private static final Duration[] HEARTBEAT_BUCKETS =
      durations(1, 5, 10, 25, 50, 100, 250, 500, 1_000, 5_000);

  /** How long one look at the outbox serves the scrape's three gauges. */
  private static final long OUTBOX_MEMO_NANOS = 1_000_000_000L;

  private final MeterRegistry registry;
  private final Map<ReconnectReason, Counter> reconnects = new EnumMap<>(ReconnectReason.class);
  private final Timer heartbeat;
  private final Map<StreamKill, Counter> kills = new EnumMap<>(StreamKill.class);
  private final DistributionSummary handedOver;
  private final Timer killWindow;
  private final JvmGcMetrics gc = new JvmGcMetrics();

  /** Every tool's slots in use, and the sum of their max, for the worker-wide ratio. */
  private final List<IntSupplier> inUse = new CopyOnWriteArrayList<>();

  private final AtomicLong maxSum = new AtomicLong();
  private ToolMetrics unknownTool;

  public MicrometerMetrics(MeterRegistry registry) {
    this.registry = registry;
    for (ReconnectReason r : ReconnectReason.values()) {
      reconnects.put(
          r,
          Counter.builder(RECONNECTS)
              .tag("reason", r.label())
              .description("Work stream reconnects by why the previous stream ended")
              .register(registry));
    }
    for (StreamKill k : StreamKill.values()) {
      kills.put(
          k,
          Counter.builder(STREAM_KILLS)
              .tag("cause", k.label())
              .description("Registered streams the runtime ended with an error status")
              .register(registry));
    }
    handedOver =
        DistributionSummary.builder(KILL_HANDED_OVER)
            .description("Calls handed to a rescue registration per stream kill")
            .register(registry);
    killWindow =
        Timer.builder(KILL_WINDOW)
            .description("From a stream kill to the replacement of its dead registration")
            .serviceLevelObjectives(KILL_WINDOW_BUCKETS)
            .register(registry);
    heartbeat =
        Timer.builder(HEARTBEAT_ROUND_TRIP)
            .description("Time from heartbeat to heartbeat_ack")
            .serviceLevelObjectives(HEARTBEAT_BUCKETS)
            .register(registry);
    Gauge.builder(SLOTS_IN_USE_RATIO, this, MicrometerMetrics::slotsInUseRatio)
        .description("Slots in use over all handlers / the sum of their max_concurrency")
        .register(registry);
    new JvmMemoryMetrics().bindTo(registry);
    gc.bindTo(registry);
    new JvmThreadMetrics().bindTo(registry);
    new ProcessorMetrics().bindTo(registry);
  }

  @Override
  public ToolMetrics tool(String key, int maxConcurrency, IntSupplier slotsInUse) {
    Gauge.builder(SLOTS_IN_USE, slotsInUse, IntSupplier::getAsInt)
        .tag("tool", key)
        .description("Slots in use, as the runtime counts them")
        .strongReference(true)
        .register(registry);
    Gauge.builder(SLOTS_MAX, () -> maxConcurrency)
        .tag("tool", key)
        .description("Slots advertised (max_concurrency)")
        .register(registry);
    inUse.add(slotsInUse);
    maxSum.addAndGet(maxConcurrency);
    return meters(key, true);
  }

  private double slotsInUseRatio() {
    long max = maxSum.get();
    if (max <= 0) {
      return 0;
    }
    long used = 0;
    for (IntSupplier s : inUse) {
      used += s.getAsInt();
    }
    return Math.min(1.0, (double) used / max);
  }

  @Override
  public synchronized ToolMetrics unknownTool() {
    if (unknownTool == null) {
      unknownTool = meters(UNKNOWN_TOOL, false);
    }
    return unknownTool;
  }

  private ToolMetrics meters(String tool, boolean withTimer) {
    Counter[] counters = new Counter[InvocationOutcome.values().length];
    for (InvocationOutcome o : InvocationOutcome.values()) {
      counters[o.ordinal()] =
          Counter.builder(INVOCATIONS)
              .tags("tool", tool, "outcome", o.outcome(), "code", o.code())
              .description("Invokes by tool@version and outcome")
              .register(registry);
    }
    Timer timer =
        withTimer
            ? Timer.builder(HANDLER_DURATION)
                .tag("tool", tool)
                .description("Handler run time, to its result, error or deadline")
                .serviceLevelObjectives(HANDLER_BUCKETS)
                .register(registry)
            : null;
    Counter runaways =
        Counter.builder(HANDLER_RUNAWAYS)
            .tag("tool", tool)
            .description("Handlers that ran on past their call's cancel or deadline")
            .register(registry);
    return new ToolMetrics() {
      @Override
      public void runaway() {
        runaways.increment();
      }

      @Override
      public void count(InvocationOutcome outcome) {
        counters[outcome.ordinal()].increment();
      }

      @Override
      public void handlerTime(Duration time) {
        if (timer != null) {
          timer.record(time);
        }
      }
    };
  }

  @Override
  public void reconnect(ReconnectReason reason) {
    reconnects.get(reason).increment();
  }

  @Override
  public void streamKilled(StreamKill cause, int handedOverCalls, Duration window) {
    kills.get(cause).increment();
    handedOver.record(handedOverCalls);
    killWindow.record(window);
  }

  @Override
  public void heartbeatRoundTrip(Duration roundTrip) {
    heartbeat.record(roundTrip);
  }

  /** {@code phrony_worker_registered}: 1 while {@code registered} says so. */
  public void bindRegistered(BooleanSupplier registered) {
    Gauge.builder(REGISTERED, registered, r -> r.getAsBoolean() ? 1 : 0)
        .description("1 while registered with the runtime on a live stream")
        .strongReference(true)
        .register(registry);
  }

  /**
   * {@code phrony_worker_plugin_generation} (the plugin generation served) and {@code
   * phrony_worker_streams_open} (Work streams open: two while a reload hands over).
   */
  public void bindPlugins(
      java.util.function.IntSupplier generation, java.util.function.IntSupplier streamsOpen) {
    Gauge.builder("phrony.worker.plugin.generation", generation, g -> g.getAsInt())
        .description(
            "The plugin generation served; each reload that changes what is"
                + " advertised starts the next")
        .strongReference(true)
        .register(registry);
    Gauge.builder("phrony.worker.streams.open", streamsOpen, g -> g.getAsInt())
        .description("Work streams open (two while a plugin reload hands over)")
        .strongReference(true)
        .register(registry);
  }

  private final Map<String, AtomicInteger> leakedLoaders = new ConcurrentHashMap<>();

  /**
   * {@code phrony_worker_plugin_loaders_leaked{plugin}}: old class loaders of a plugin still in
   * memory after its reload (see PluginUnloader).
   */
  public void leakedLoaders(String plugin, int count) {
    leakedLoaders
        .computeIfAbsent(
            plugin,
            p -> {
              var n = new AtomicInteger();
              Gauge.builder("phrony.worker.plugin.loaders.leaked", n, AtomicInteger::get)
                  .tag("plugin", p)
                  .description("Old class loaders of a plugin still in memory after a reload")
                  .strongReference(true)
                  .register(registry);
              return n;
            })
        .set(count);
  }

  /** {@code phrony_worker_plugin_reloads_total{outcome}}: one more reload that ended so. */
  public void pluginReload(String outcome) {
    io.micrometer.core.instrument.Counter.builder("phrony.worker.plugin.reloads")
        .description("Plugin reloads by outcome: reloaded, unchanged, refused, failed")
        .tag("outcome", outcome)
        .register(registry)
        .increment();
  }

  /**
   * {@code phrony_worker_handlers_runaway}: handlers that ignored a cancel or a deadline and still
   * run, each holding a thread.
   */
  public void bindRunaway(java.util.function.IntSupplier runaway) {
    Gauge.builder(HANDLERS_RUNAWAY, runaway, r -> r.getAsInt())
        .description("Handlers still running after their call was cancelled or timed out")
        .strongReference(true)
        .register(registry);
  }

  /** {@code phrony_worker_outbox_entries{state}} for held, orphaned and interrupted calls. */
  public void bindOutbox(DurableOutbox outbox) {
    Supplier<Map<OutboxEntry.State, Integer>> counts =
        new Supplier<>() {
          private long at;
          private Map<OutboxEntry.State, Integer> last;

          @Override
          public synchronized Map<OutboxEntry.State, Integer> get() {
            long now = System.nanoTime();
            if (last == null || now - at > OUTBOX_MEMO_NANOS) {
              Map<OutboxEntry.State, Integer> m = new EnumMap<>(OutboxEntry.State.class);
              for (OutboxEntry.State s : OutboxEntry.State.values()) {
                m.put(s, 0);
              }
              outbox.entries().forEach(e -> m.merge(e.state(), 1, Integer::sum));
              last = m;
              at = now;
            }
            return last;
          }
        };
    FunctionCounter.builder(OUTBOX_DURABILITY_FAILURES, outbox, DurableOutbox::durabilityFailures)
        .description(
            "Durable results and intents whose write to disk failed (each failed retry counts)")
        .register(registry);
    FunctionCounter.builder(OUTBOX_FLUSHES, outbox, DurableOutbox::flushCount)
        .description("Device flushes (fdatasync/fsync) of the outbox's files")
        .register(registry);
    Gauge.builder(OUTBOX_WAITING_FOR_DISK, outbox, DurableOutbox::waitingForDisk)
        .description("Durable results held and not sent because the disk refuses them")
        .register(registry);
    Gauge.builder(OUTBOX_DISK_FREE, outbox, o -> o.room().freeBytes())
        .description(
            "Bytes free on the outbox's disk; below one segment (4 MiB) the worker is not ready")
        .baseUnit("bytes")
        .register(registry);
    for (OutboxEntry.State s :
        new OutboxEntry.State[] {
          OutboxEntry.State.HELD, OutboxEntry.State.ORPHANED, OutboxEntry.State.INTERRUPTED
        }) {
      Gauge.builder(OUTBOX_ENTRIES, counts, c -> c.get().get(s))
          .tag("state", s.label())
          .description(
              "Calls the outbox keeps: held (awaiting result_ack), orphaned," + " interrupted")
          .strongReference(true)
          .register(registry);
    }
  }

  @Override
  public void close() {
    gc.close();
  }

  private static Duration[] durations(long... millis) {
    Duration[] out = new Duration[millis.length];
    for (int i = 0; i < millis.length; i++) {
      out[i] = Duration.ofMillis(millis[i]);
    }
    return out;
  }
}
