package dev.phrony.worker.call;

import com.fasterxml.jackson.core.JsonProcessingException;
import dev.phrony.worker.api.AsyncToolHandler;
import dev.phrony.worker.api.ToolException;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.api.ToolResult;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What happens to one call between its arguments and its outcome, the same in the worker and in the
 * plugin test harness: the arguments are checked (well-formed JSON, then the handler's schema), the
 * handler runs with its plugin's classloader as context loader, and what it returns or throws
 * becomes the {@link CallOutcome} the runtime is sent. Stateless and thread-safe; who runs a call,
 * when, and whether its outcome is sent is the caller's business.
 */
public final class CallPipeline {
  private static final Logger log = LoggerFactory.getLogger(CallPipeline.class);

  /** Codes this pipeline answers with (besides the handlers' own). */
  public static final String INVALID_ARGS = ToolException.INVALID_ARGS;

  public static final String INTERNAL = "internal";
  public static final String DEADLINE_EXCEEDED = "deadline_exceeded";
  public static final String RESULT_TOO_LARGE = "result_too_large";
  public static final String CANCELLED = "cancelled";

  /**
   * @param maxResultBytes largest payload; a larger one becomes {@code result_too_large}
   * @param exposeInternalErrors tell the model the class and message of an unexpected exception
   *     (development); off, it gets only a reference to the log line, since that text may hold
   *     secrets
   */
  public record Settings(int maxResultBytes, boolean exposeInternalErrors) {
    public Settings {
      if (maxResultBytes <= 0) {
        throw new IllegalArgumentException("max result size must be positive");
      }
    }
  }

  /**
   * Why arguments never reach the handler.
   *
   * @param nack answer with a {@code nack} (the arguments are not JSON at all) rather than an error
   *     result (they are JSON but break the schema)
   */
  public record Refusal(boolean nack, String code, String message) {}

  private final JsonCodec codec;
  private final Settings settings;

  public CallPipeline(JsonCodec codec, Settings settings) {
    this.codec = codec;
    this.settings = settings;
  }

  public JsonCodec codec() {
    return codec;
  }

  public Settings settings() {
    return settings;
  }

  /** Null when {@code args} may reach the handler; else what to answer instead. */
  public Refusal checkArgs(ByteBuffer args, ArgsCheck check) {
    if (!codec.isJson(args)) {
      String why = codec.jsonProblem(args);
      return new Refusal(
          true,
          INVALID_ARGS,
          why == null || why.equals("not valid JSON")
              ? "arguments are not valid JSON"
              : "arguments cannot be read: " + why);
    }
    String violation = check.violation(args.duplicate());
    return violation == null
        ? null
        : new Refusal(false, INVALID_ARGS, "arguments do not fit the input schema: " + violation);
  }

  /**
   * Runs {@code handler} on this thread and maps what it returns or throws; never throws. A {@link
   * ToolException} is the author's chosen error; anything else is a bug whose text may hold
   * secrets, so it is logged under a reference that is all the model sees.
   */
  @SuppressWarnings("try")
  public CallOutcome run(ToolHandler handler, ClassLoader loader, CallContext call) {
    try (var tccl = ContextClassLoader.swap(loader)) {
      return encode(handler.handle(call));
    } catch (Throwable t) {
      return failed(t, call);
    }
  }

  /**
   * Starts {@code handler} on this thread and returns its outcome, mapped as {@link #run} maps it,
   * once its stage completes; never throws, and the future never fails. A stage that is already
   * complete gives a completed future at once, on this thread. A stage that is a {@code
   * CompletableFuture} is cancelled with the call ({@link CallContext#markCancelled}).
   */
  @SuppressWarnings("try")
  public CompletableFuture<CallOutcome> start(
      AsyncToolHandler handler, ClassLoader loader, CallContext call) {
    CompletionStage<ToolResult> stage;
    try (var tccl = ContextClassLoader.swap(loader)) {
      stage = handler.handleAsync(call);
    } catch (Throwable t) {
      return CompletableFuture.completedFuture(failed(t, call));
    }
    if (stage == null) {
      return CompletableFuture.completedFuture(
          failed(
              new NullPointerException(
                  handler.getClass().getName() + ".handleAsync returned null, not a stage"),
              call));
    }
    if (stage instanceof CompletableFuture<?> f) {
      call.cancelWithCall(f);
    }
    CompletableFuture<CallOutcome> outcome = new CompletableFuture<>();
    stage.whenComplete(
        (result, error) -> {
          if (error != null) {
            outcome.complete(
                failed(
                    error instanceof CompletionException && error.getCause() != null
                        ? error.getCause()
                        : error,
                    call));
            return;
          }
          try (var tccl = ContextClassLoader.swap(loader)) {
            outcome.complete(encode(result));
          } catch (Throwable t) {
            outcome.complete(failed(t, call));
          }
        });
    return outcome;
  }

  /** What a handler's throw becomes: its own error, a cancel's (never sent), or internal. */
  private CallOutcome failed(Throwable t, CallContext call) {
    if (t instanceof ToolException e) {
      return CallOutcome.error(e.code(), e.getMessage());
    }
    if (call.isCancelled()) {
      return CallOutcome.error(CANCELLED, "the call was cancelled"); // never sent
    }
    return internal(t);
  }

  /** The outcome of an unexpected exception: logged with its stack, a reference for the model. */
  public CallOutcome internal(Throwable t) {
    String ref = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
    log.warn("handler failed (ref {}): {}", ref, t.toString(), t);
    String detail =
        settings.exposeInternalErrors()
            ? t.getClass().getName() + (t.getMessage() == null ? "" : ": " + t.getMessage())
            : "internal error";
    return CallOutcome.error(INTERNAL, detail + " (ref " + ref + ")");
  }

  /** The outcome of a call whose deadline passed after {@code ranMs} of running. */
  public static CallOutcome deadlineExceeded(long ranMs) {
    return CallOutcome.error(
        DEADLINE_EXCEEDED, "the call's deadline passed after " + ranMs + " ms");
  }

  private CallOutcome encode(ToolResult result) throws JsonProcessingException {
    byte[] payload =
        switch (result) {
          case null -> "null".getBytes(StandardCharsets.US_ASCII);
          case ToolResult.Json j -> {
            if (!codec.isJson(j.utf8())) {
              throw new ToolException(
                  INTERNAL, "handler returned a JSON result that does not parse");
            }
            yield j.utf8();
          }
          case ToolResult.Value v -> codec.encode(v.value());
          case ToolResult.Text t -> t.text().getBytes(StandardCharsets.UTF_8);
        };
    if (payload.length > settings.maxResultBytes()) {
      return CallOutcome.error(
          RESULT_TOO_LARGE,
          "result of "
              + payload.length
              + " bytes exceeds the limit of "
              + settings.maxResultBytes()
              + " bytes");
    }
    return new CallOutcome.Payload(payload);
  }
}
