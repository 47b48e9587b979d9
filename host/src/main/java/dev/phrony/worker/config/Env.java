package dev.phrony.worker.config;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * The environment variable of a setting whose name does not follow the {@code PHRONY_WORKER_<NAME>}
 * rule: the reference worker's names ({@code PHRONY_RUNTIME_ADDR}, {@code WORKER_ID}, ...), kept so
 * deployments written for it work unchanged.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.FIELD, ElementType.METHOD})
public @interface Env {
  String value();
}
