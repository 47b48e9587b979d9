package dev.phrony.worker.config;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a class of picocli options (a command or a mixin) whose options are worker settings: each
 * can also be set by an environment variable and by a key of {@code worker.yaml}, both derived from
 * the option's long name (see {@link LayeredDefaults}). There is no second list of settings to keep
 * in step: the options are the list.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
public @interface Configurable {}
