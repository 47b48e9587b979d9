package dev.phrony.worker.ops;

import ch.qos.logback.classic.ClassicConstants;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.core.joran.spi.JoranException;
import ch.qos.logback.core.joran.util.ConfigurationWatchListUtil;
import java.net.MalformedURLException;
import java.net.URI;
import java.net.URL;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.ILoggerFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;

/**
 * Applies {@code --log-format} and {@code --log-level} once a command knows them.
 *
 * <p>Ordering: the settings come from flags, the environment and {@code worker.yaml}, so they are
 * known only after the command line is parsed, while logback configures itself from {@code
 * conf/logback.xml} as soon as the first logger is created. Nothing logs before a command runs; the
 * command calls {@link #apply} first thing, which loads the same file again with the chosen format
 * and level as its variables ({@value #FORMAT_VARIABLE}, {@value #LEVEL_VARIABLE}), so the file
 * stays the one place that defines what each format looks like. Without a configuration file
 * (embedded use, tests) only the root level is set.
 *
 * <p>It also routes {@code java.util.logging} (gRPC's own logging) through the same appenders, so
 * every line on stderr has the chosen format, and installs the {@link FrameLogGuard}, so no
 * configuration can log HTTP/2 frames and the bearer token in their headers.
 */
public final class LogSetup {
  public static final String FORMAT_VARIABLE = "PHRONY_LOG_FORMAT";
  public static final String LEVEL_VARIABLE = "PHRONY_LOG_LEVEL";

  private static final AtomicReference<java.util.logging.Logger> GRPC_JUL = new AtomicReference<>();

  private LogSetup() {}

  /**
   * Until the returned handle is closed, {@code logger}'s INFO lines (and those of the loggers
   * under it) are dropped, WARN and ERROR kept: for work whose routine lines would read as the
   * worker's own (a warm-up's connect and register). Only while nothing else logs there.
   */
  public static AutoCloseable warnOnly(String logger) {
    if (!(LoggerFactory.getILoggerFactory() instanceof LoggerContext ctx)) {
      return () -> {};
    }
    ch.qos.logback.classic.Logger l = ctx.getLogger(logger);
    Level before = l.getLevel();
    if (l.getEffectiveLevel().isGreaterOrEqual(Level.WARN)) {
      return () -> {};
    }
    l.setLevel(Level.WARN);
    return () -> l.setLevel(before);
  }

  /** Switches format and level; returns the configuration file it loaded, if any. */
  public static URL apply(LogFormat format, LogLevel level) {
    ILoggerFactory factory = LoggerFactory.getILoggerFactory();
    if (!(factory instanceof LoggerContext ctx)) {
      return null; // not logback: leave logging to whoever configured it
    }
    routeJulToSlf4j();
    URL config = configurationFile(ctx);
    if (config == null) {
      ctx.getLogger(Logger.ROOT_LOGGER_NAME).setLevel(Level.toLevel(level.name()));
      FrameLogGuard.install(ctx);
      return null;
    }
    configure(ctx, config, format, level);
    return config;
  }

  /**
   * The file logback configured itself from: {@code -Dlogback.configurationFile} (set by {@code
   * bin/phrony-worker}), else what logback recorded (only kept when it scans).
   */
  static URL configurationFile(LoggerContext ctx) {
    String property = System.getProperty(ClassicConstants.CONFIG_FILE_PROPERTY);
    if (property != null && !property.isBlank()) {
      try {
        return property.contains(":/")
            ? URI.create(property).toURL()
            : Path.of(property).toUri().toURL();
      } catch (MalformedURLException | IllegalArgumentException e) {
        return null;
      }
    }
    return ConfigurationWatchListUtil.getMainWatchURL(ctx);
  }

  /** Loads {@code config} into {@code ctx} afresh with the format and level as its variables. */
  static void configure(LoggerContext ctx, URL config, LogFormat format, LogLevel level) {
    ctx.reset();
    ctx.putProperty(FORMAT_VARIABLE, format.name());
    ctx.putProperty(LEVEL_VARIABLE, level.name());
    JoranConfigurator configurator = new JoranConfigurator();
    configurator.setContext(ctx);
    try {
      configurator.doConfigure(config);
    } catch (JoranException e) {
      System.err.println("logging: " + config + " could not be loaded: " + e.getMessage());
    }
    FrameLogGuard.install(ctx);
  }

  /**
   * gRPC logs through {@code java.util.logging}; its loggers (only: the JDK's own stay with JUL) go
   * to SLF4J instead of JUL's console handler, so they come out in the chosen format.
   */
  private static synchronized void routeJulToSlf4j() {
    java.util.logging.Logger grpc = java.util.logging.Logger.getLogger("io.grpc");
    if (Arrays.stream(grpc.getHandlers()).noneMatch(h -> h instanceof SLF4JBridgeHandler)) {
      grpc.addHandler(new SLF4JBridgeHandler());
      grpc.setUseParentHandlers(false);
      GRPC_JUL.set(grpc); // JUL holds loggers weakly: keep the configured one
    }
  }
}
