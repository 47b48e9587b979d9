package dev.phrony.worker.api;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Describes one component of a {@link TypedToolHandler}'s argument record, for the input schema the
 * worker generates from the record when the descriptor gives none. Every component is required
 * unless it says {@code required = false} (or carries an annotation named {@code Nullable}); its
 * JSON type comes from its Java type (an enum lists its constants).
 *
 * <pre>{@code
 * public record Args(
 *     @ToolParam(description = "ISO 4217 code", pattern = "^[A-Z]{3}$", examples = "EUR")
 *         String currency,
 *     @ToolParam(description = "how long to wait", required = false, minimum = 0) Long waitMs) {}
 * }</pre>
 *
 * <p>Numeric bounds left unset are {@link Double#NaN}.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.RECORD_COMPONENT, ElementType.FIELD})
public @interface ToolParam {
  /** What the argument is, for the model and for humans. */
  String description() default "";

  /** Whether a call must give it; {@code true} unless set. */
  boolean required() default true;

  /** A regular expression a text argument must match ({@code pattern}). */
  String pattern() default "";

  /** The least a number may be ({@code minimum}). */
  double minimum() default Double.NaN;

  /** The most a number may be ({@code maximum}). */
  double maximum() default Double.NaN;

  /** A number must be more than this ({@code exclusiveMinimum}). */
  double exclusiveMinimum() default Double.NaN;

  /** A number must be less than this ({@code exclusiveMaximum}). */
  double exclusiveMaximum() default Double.NaN;

  /**
   * Example values: for a text argument the text itself, for others the JSON value ({@code "12.5"},
   * {@code "true"}). When every required argument has one, the schema also gets an example call.
   */
  String[] examples() default {};
}
