package dev.phrony.worker.api;

import java.util.Objects;

/**
 * A handler that takes its arguments as a record {@code A} and returns a value {@code R} that the
 * host encodes as JSON.
 *
 * <p>When {@code A} is a record and the descriptor gives no input schema, the worker generates one
 * from the record (JSON types from the components' types, every component required unless marked
 * otherwise, descriptions and rules from {@link ToolParam}) and checks every call against it.
 *
 * <pre>{@code
 * public final class Forecast extends TypedToolHandler<Forecast.Args, Forecast.Result> {
 *   public record Args(String city) {}
 *   public record Result(String city, int highC) {}
 *
 *   public Forecast() { super(Args.class); }
 *
 *   public ToolDescriptor descriptor() {
 *     return ToolDescriptor.builder("weather.get-forecast").version("1.0.0")
 *         .sideEffectClass(SideEffectClass.READ_ONLY).build();
 *   }
 *
 *   protected Result handle(Args args, ToolCall call) {
 *     return new Result(args.city(), 12);
 *   }
 * }
 * }</pre>
 *
 * @param <A> the arguments type, decoded from the call's JSON arguments
 * @param <R> the result type, encoded as the JSON payload
 */
public abstract class TypedToolHandler<A, R> implements ToolHandler {
  private final Class<A> argsType;

  protected TypedToolHandler(Class<A> argsType) {
    this.argsType = Objects.requireNonNull(argsType, "argsType");
  }

  /** The type the call's arguments are decoded into (the worker generates a schema from it). */
  public final Class<A> argsType() {
    return argsType;
  }

  /** Runs one call with decoded arguments; see {@link ToolHandler#handle(ToolCall)}. */
  protected abstract R handle(A args, ToolCall call) throws Exception;

  @Override
  public final ToolResult handle(ToolCall call) throws Exception {
    return ToolResult.of(handle(call.args(argsType), call));
  }
}
