package dev.phrony.worker.ops;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.turbo.TurboFilter;
import ch.qos.logback.core.spi.FilterReply;
import java.util.List;
import org.slf4j.Marker;

/**
 * Keeps HTTP/2 frame logs out of the log at any configured level. gRPC's Netty transport logs every
 * frame at DEBUG, request headers included, and so the {@code authorization: Bearer} token: a
 * logger turned up to DEBUG (or a root level of DEBUG with no override) would write the token to
 * the log. This filter refuses DEBUG and TRACE from those loggers before any appender sees them;
 * installed by {@link LogSetup} after every (re)configuration, so a changed {@code logback.xml}
 * cannot undo it.
 */
public final class FrameLogGuard extends TurboFilter {
  private static final List<String> FRAME_LOGGERS =
      List.of(
          "io.grpc.netty.NettyClientHandler",
          "io.grpc.netty.NettyServerHandler",
          "io.netty.handler.codec.http2",
          "io.netty.handler.logging");

  /** Adds the guard to {@code ctx} unless it is there already. */
  public static void install(LoggerContext ctx) {
    if (ctx.getTurboFilterList().stream().noneMatch(f -> f instanceof FrameLogGuard)) {
      FrameLogGuard guard = new FrameLogGuard();
      guard.setName("frame-log-guard");
      guard.setContext(ctx);
      guard.start();
      ctx.addTurboFilter(guard);
    }
  }

  @Override
  public FilterReply decide(
      Marker marker, Logger logger, Level level, String format, Object[] params, Throwable t) {
    if (level == null || level.isGreaterOrEqual(Level.INFO)) {
      return FilterReply.NEUTRAL;
    }
    String name = logger.getName();
    for (String prefix : FRAME_LOGGERS) {
      if (name.startsWith(prefix)) {
        return FilterReply.DENY;
      }
    }
    return FilterReply.NEUTRAL;
  }
}
