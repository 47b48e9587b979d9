package dev.phrony.worker.work;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;

/**
 * First in a Work channel's pipeline, next to the socket: notes when bytes are read and when writes
 * are flushed, for {@link WireTimings}. Passes everything on unchanged.
 */
final class WireTap extends ChannelDuplexHandler {
  private final WireTimings timings;

  WireTap(WireTimings timings) {
    this.timings = timings;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    timings.socketRead();
    ctx.fireChannelRead(msg);
  }

  @Override
  public void flush(ChannelHandlerContext ctx) {
    ctx.flush();
    timings.socketFlushed();
  }
}
