package dev.phrony.worker.harness;

import dev.phrony.worker.api.AsyncToolHandler;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolHandler;
import java.lang.reflect.Constructor;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Runs a handler as the worker runs it, without a runtime: the arguments are checked as the worker
 * checks them, the handler runs on a virtual thread of its own with its classloader as context
 * loader (an {@link AsyncToolHandler} is started there, and its stage awaited), and what it returns
 * or throws is encoded and mapped exactly as the worker would send it.
 *
 * <pre>{@code
 * try (var harness = HandlerHarness.of(new GetForecast())) {
 *   CallOutcome out = harness.call("{\"city\":\"Oslo\"}");
 * }
 * }</pre>
 *
 * <p>The worker's call pipeline, and the Jackson it encodes with, come inside the harness's own jar
 * and are loaded apart from the test's class path, so whatever Jackson or Guava a plugin puts there
 * cannot replace them. The handler is loaded as the worker loads a plugin: a classloader of its own
 * over the test's class path (the plugin's classes and its libraries), which takes the plugin API,
 * SLF4J and the Jackson annotations from the harness's side (the annotations are the pipeline's own
 * copy, so {@code @JsonProperty} on a record means what it means in the worker). Each harness has
 * its own such loader, closed with it, as the worker has one per plugin.
 */
public final class HandlerHarness implements AutoCloseable {
  /** The result size the worker allows by default (the runtime's 4 MiB minus the envelope). */
  public static final int DEFAULT_MAX_RESULT_BYTES = 4 * 1024 * 1024 - 16 * 1024;

  private final HarnessPipeline.Handler handler;
  private final AtomicLong ids = new AtomicLong();

  private HandlerHarness(HarnessPipeline.Handler handler) {
    this.handler = handler;
  }

  /**
   * A harness for {@code handler}'s class, with the worker's default settings: arguments are
   * checked against the descriptor's input schema, compiled as the worker compiles it.
   *
   * <p>When the class is public and its only constructor is public and takes no arguments (what the
   * worker's {@code ServiceLoader} needs, and all it would call), the instance given only names the
   * class: the harness loads the class afresh from the test's class path as the worker loads a
   * plugin's, and creates its own instance. Otherwise (another constructor, e.g. one that takes
   * test doubles; a class that is not public) the instance given runs itself, in the test's own
   * loader: the pipeline is still the worker's, but the handler's classes and libraries are the
   * test class path's, and Jackson annotations on its records are not the pipeline's, which then
   * ignores them (the worker would honour them). Use {@link #forTool} to find a handler exactly as
   * the worker does.
   *
   * @throws IllegalArgumentException if the input schema cannot serve (the worker would refuse to
   *     load the plugin, naming the same reason)
   * @throws IllegalStateException if the class cannot be loaded or created as the worker would
   */
  public static HandlerHarness of(ToolHandler handler) {
    Class<?> c = handler.getClass();
    HarnessPipeline pipeline = IsolatedPipeline.get();
    return new HandlerHarness(
        loadable(c) ? pipeline.load(c.getName(), TestClasspath.of(c)) : pipeline.adopt(handler));
  }

  /**
   * A harness for the handler serving {@code key} ({@code tool@version}; {@code tool@default} for
   * an unversioned one), found as the worker finds a plugin's handlers: through the {@code
   * ServiceLoader} of a plugin loader over the test's class path (the context classloader's), which
   * reads {@code META-INF/services/dev.phrony.worker.api.ToolHandler} and creates each listed
   * handler with its public no-argument constructor.
   *
   * @throws IllegalArgumentException if no listed handler serves {@code key} (naming those that do
   *     serve), or the input schema cannot serve
   */
  public static HandlerHarness forTool(String key) {
    ClassLoader context = Thread.currentThread().getContextClassLoader();
    return new HandlerHarness(
        IsolatedPipeline.get()
            .discover(
                key,
                TestClasspath.of(
                    context != null ? context : HandlerHarness.class.getClassLoader())));
  }

  /** True if the worker would create {@code c} the one way there is: its public no-arg one. */
  private static boolean loadable(Class<?> c) {
    Constructor<?>[] constructors = c.getDeclaredConstructors();
    return Modifier.isPublic(c.getModifiers())
        && !c.isHidden()
        && c.getCanonicalName() != null
        && constructors.length == 1
        && Modifier.isPublic(constructors[0].getModifiers())
        && constructors[0].getParameterCount() == 0;
  }

  /** The handler's descriptor, as the worker reads it. */
  public ToolDescriptor descriptor() {
    return handler.descriptor();
  }

  /** Calls the handler with JSON arguments under a fresh call id and waits for the outcome. */
  public CallOutcome call(String argsJson) {
    return call("harness-call-" + ids.incrementAndGet(), argsJson, 0);
  }

  /**
   * Calls the handler as the runtime would invoke {@code callId}, with an optional deadline ({@code
   * deadlineUnixMs} 0 = none), and waits for the outcome: the payload, a tool error, or a nack the
   * worker would send (as an error with the nack's code).
   */
  public CallOutcome call(String callId, String argsJson, long deadlineUnixMs) {
    return handler.call(callId, argsJson, deadlineUnixMs);
  }

  /** The payload of a successful call as text, or an AssertionError naming the tool error. */
  public static String payloadText(CallOutcome outcome) {
    return switch (outcome) {
      case CallOutcome.Payload p -> new String(p.bytes(), StandardCharsets.UTF_8);
      case CallOutcome.Error e ->
          throw new AssertionError("tool error " + e.code() + ": " + e.message());
    };
  }

  /** Closes the loader the handler was loaded in (none for a handler that runs in place). */
  @Override
  public void close() {
    handler.close();
  }
}
