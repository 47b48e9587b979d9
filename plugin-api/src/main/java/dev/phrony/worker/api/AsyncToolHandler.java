package dev.phrony.worker.api;

import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;

/**
 * A handler that never blocks: {@link #handleAsync} returns at once with a stage that completes
 * when the call's work is done (an asynchronous client's future, a timer, or a value it already
 * has). The worker calls it on the thread that reads the Work stream, so a call costs no thread of
 * its own and no hand-off: the cheapest way to serve a tool, as the TypeScript SDK's handlers are
 * served.
 *
 * <p>The price is the rule: {@code handleAsync} must not block or compute for long. No {@code
 * Thread.sleep}, no blocking I/O, no {@code join()} or {@code get()} on a stage that is not
 * complete: while it runs, no other call's message is read or sent. The worker times each call of
 * it. One that keeps the thread longer than {@value #BLOCKING_LIMIT_MS} ms is logged; after three
 * such calls in a row the handler's calls run on threads of their own, as a {@link ToolHandler}'s
 * do, until the worker restarts. A start that keeps the thread over a second is interrupted, and
 * the handler moved off at once. A handler that blocks should implement {@link ToolHandler}
 * instead.
 *
 * <p>The stage may complete on any thread. Complete it with the {@link ToolResult}, or
 * exceptionally with a {@link ToolException} for an error the model should see; anything else (a
 * throw from {@code handleAsync} included) is mapped as {@link ToolHandler#handle} maps it. When
 * the call is cancelled or its deadline passes, {@link ToolCall#isCancelled()} turns true and the
 * worker cancels the returned stage if it is a {@code CompletableFuture}; its outcome is not sent
 * then.
 */
public interface AsyncToolHandler extends ToolHandler {

  /** How long, in ms, {@link #handleAsync} may keep the worker's thread before it is moved off. */
  long BLOCKING_LIMIT_MS = 20;

  /** Starts one call and returns at once; see the class comment for the rules. */
  CompletionStage<ToolResult> handleAsync(ToolCall call);

  /**
   * The blocking form: starts the call and waits for its stage. The worker never calls it; it is
   * here so an asynchronous handler can still be called where a {@link ToolHandler} is expected.
   */
  @Override
  default ToolResult handle(ToolCall call) throws Exception {
    try {
      return handleAsync(call).toCompletableFuture().get();
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }
}
