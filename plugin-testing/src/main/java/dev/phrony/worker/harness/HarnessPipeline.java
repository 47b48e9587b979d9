package dev.phrony.worker.harness;

import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolHandler;
import java.nio.file.Path;
import java.util.List;

/**
 * The worker's call pipeline as {@link HandlerHarness} reaches it: the harness keeps the pipeline
 * and the Jackson it needs in a classloader of their own, apart from the test's class path, and
 * only JDK, plugin API and harness types cross between the two (they are the same classes on both
 * sides). Implemented inside the harness; a test has no use for it.
 */
public interface HarnessPipeline {

  /**
   * Loads {@code className} from {@code classpath} as the worker loads a plugin's class (see {@code
   * PluginClassLoader}), and creates it with its public no-argument constructor.
   */
  Handler load(String className, List<Path> classpath);

  /**
   * The handler serving {@code key} ({@code tool@version}) among those the {@code ServiceLoader} of
   * a plugin loader over {@code classpath} finds, as the worker finds a plugin's handlers.
   *
   * @throws IllegalArgumentException naming the keys found, if none serves {@code key}
   */
  Handler discover(String key, List<Path> classpath);

  /** {@code handler} itself, in the loader it was loaded in. */
  Handler adopt(ToolHandler handler);

  /** One handler, ready for calls; closing it closes the loader the harness loaded it in. */
  interface Handler extends AutoCloseable {
    ToolDescriptor descriptor();

    /** See {@link HandlerHarness#call(String, String, long)}. */
    CallOutcome call(String callId, String argsJson, long deadlineUnixMs);

    @Override
    void close();
  }
}
