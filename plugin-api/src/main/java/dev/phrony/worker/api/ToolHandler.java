package dev.phrony.worker.api;

/**
 * A tool implementation hosted by phrony-worker.
 *
 * <p>Implementations need a public no-argument constructor and a line with their class name in
 * {@code META-INF/services/dev.phrony.worker.api.ToolHandler}. One instance serves every call, on
 * many threads at once (up to {@link ToolDescriptor#maxConcurrency()}), so keep it thread-safe.
 * Each call runs on its own virtual thread, with the plugin's classloader as the thread context
 * classloader; blocking is fine.
 *
 * <p>Prefer {@link TypedToolHandler} for handlers whose arguments and result are records, and
 * {@link AsyncToolHandler} for handlers that never block (they cost no thread per call).
 */
public interface ToolHandler {

  /** What this handler serves. Called once, when the plugin is loaded. */
  ToolDescriptor descriptor();

  /**
   * Runs one call. Return a result, or throw {@link ToolException} for an error the model should
   * see. The thread is interrupted when the call is cancelled or its deadline passes; a handler
   * should let {@link InterruptedException} propagate.
   */
  ToolResult handle(ToolCall call) throws Exception;
}
