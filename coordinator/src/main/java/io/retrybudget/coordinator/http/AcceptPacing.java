package io.retrybudget.coordinator.http;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * When the listening socket takes connections: not before its HTTP server has finished listening,
 * and not while the acceptor outruns the event loop (then the kernel's accept queue holds the rest,
 * so the event loop's own queue, where a health probe's connection waits too, stays short). It
 * pauses and resumes the listening socket's auto-read.
 */
final class AcceptPacing {
  /** Accepted connections waiting for the event loop to set them up, at most. */
  static final int MAX_SETTING_UP = 64;

  /** Accepted, not yet set up by the event loop: while many are, accepting pauses (see {@link #accepted}). */
  private final AtomicInteger settingUp = new AtomicInteger();
  private volatile Channel listener;
  /**
   * False until {@link #startAccepting()}: the listening socket takes no connection (they wait in the
   * kernel's accept queue) before its HTTP server has finished listening. Vert.x binds the socket
   * first and makes the server's metrics after, and reads them twice as it sets a connection up, so
   * a connection accepted in between gets Vert.x's HTTP metrics without their per-connection part:
   * its first request throws a NullPointerException in vertx-micrometer-metrics (requestBegin, then
   * exceptionOccurred), seen at start under load while probes already knock.
   */
  private volatile boolean accepting;
  private volatile ChannelHandlerContext listening;

  /** The guard was added to the listening socket (before the bind). */
  void attach(ChannelHandlerContext ctx) {
    listening = ctx;
    listener = ctx.channel();
    if (!accepting) {
      ctx.channel().config().setAutoRead(false); // before the bind: nothing is accepted until startAccepting()
      if (accepting) {
        ctx.channel().config().setAutoRead(true); // (it was called meanwhile)
      }
    }
  }

  /** Lets the listening socket accept connections once its HTTP server listens. */
  void startAccepting() {
    accepting = true;
    ChannelHandlerContext l = listening;
    if (l != null) {
      l.executor().execute(() -> {
        if (settingUp.get() < MAX_SETTING_UP / 2 && !l.channel().config().isAutoRead()) {
          l.channel().config().setAutoRead(true);
        }
      });
    }
  }

  boolean accepting() {
    ChannelHandlerContext l = listening;
    return accepting && l != null && l.channel().config().isAutoRead();
  }

  /** A connection was accepted (the acceptor thread): it waits for its event loop to set it up. */
  void accepted(ChannelHandlerContext ctx) {
    if (settingUp.incrementAndGet() >= MAX_SETTING_UP) {
      // the acceptor outruns the event loop: let the kernel queue hold the rest, so the event loop's
      // own queue (where a health probe's connection waits too) stays short
      listener = ctx.channel();
      ctx.channel().config().setAutoRead(false);
      if (settingUp.get() < MAX_SETTING_UP / 2) {
        ctx.channel().config().setAutoRead(true); // the event loop caught up meanwhile
      }
    }
  }

  /** A connection no longer waits for its event loop (once per connection). */
  void setUp() {
    if (settingUp.decrementAndGet() < MAX_SETTING_UP / 2) {
      Channel l = listener;
      if (l != null && accepting && !l.config().isAutoRead()) {
        l.config().setAutoRead(true);
      }
    }
  }
}
