package io.retrybudget.coordinator.http;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;

/**
 * A connection's raw bytes, first in its pipeline: the first byte of a request starts its header
 * deadline, and while the connection lingers what arrives is dropped (at most
 * {@link #LINGER_MAX_BYTES}, then the connection closes). It also installs the {@link RequestGate}
 * once Vert.x has set the pipeline up.
 */
final class RawBytesWatch extends ChannelInboundHandlerAdapter {
  static final long LINGER_MAX_BYTES = 256 * 1024;

  private final GuardedConnection c;

  RawBytesWatch(GuardedConnection c) {
    this.c = c;
  }

  @Override
  public void channelActive(ChannelHandlerContext ctx) throws Exception {
    c.setUp();
    c.install(ctx.pipeline());
    super.channelActive(ctx);
  }

  @Override
  public void channelUnregistered(ChannelHandlerContext ctx) throws Exception {
    c.setUp(); // closed before it was active
    super.channelUnregistered(ctx);
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (c.discarding) {
      if (msg instanceof ByteBuf b) {
        c.discarded += b.readableBytes();
      }
      ReferenceCountUtil.release(msg);
      if (c.discarded > LINGER_MAX_BYTES) {
        c.ch.close();
      }
      return;
    }
    if (c.phase == GuardedConnection.Phase.IDLE) {
      c.enter(GuardedConnection.Phase.HEADERS, c.shared.headerNanos()); // still waiting (evictable) until the headers end
    }
    if (c.phase == GuardedConnection.Phase.HEADERS) {
      c.partialRequest = true;
    }
    ctx.fireChannelRead(msg);
  }
}
