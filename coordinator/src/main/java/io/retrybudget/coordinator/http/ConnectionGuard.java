package io.retrybudget.coordinator.http;

import io.micrometer.core.instrument.MeterRegistry;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.vertx.core.http.HttpServerOptions;
import java.net.InetAddress;

/**
 * Every HTTP connection's budget of sockets, time and bytes, enforced below Vert.x (on the
 * listening socket and in each connection's Netty pipeline), so that nothing an unauthenticated
 * client sends costs more than a bounded amount:
 * <ul>
 *   <li>at most {@link HttpLimits#maxConnections()} open connections; at the cap a new connection
 *       closes the one that has waited longest for a request (an idle keep-alive or one still in
 *       its headers, or one answered and lingering), else the one busy longest if that is over
 *       1 s; only when every request started within that is the new one closed at once, before
 *       Vert.x sees it, or admitted from the probe reserve for one health probe
 *       ({@link ConnectionCap});</li>
 *   <li>at most {@link HttpLimits#maxConnectionsPerIp()} open connections from one client address
 *       (when set): one more is closed at once, before it counts against the cap or evicts anyone
 *       ({@link PerAddressLimit});</li>
 *   <li>at most {@link #MAX_REQUESTS_PER_CONNECTION} requests per connection, and one deadline for
 *       a pipelined run of answers (not one per answer);</li>
 *   <li>one deadline per connection for the phase it is in: headers (from the accept or the first
 *       byte of a request), body (from the end of the headers), answer (from the end of the body to
 *       the last byte written) and idle keep-alive ({@link GuardedConnection}); a sweep closes
 *       connections past theirs ({@link DeadlineSweep});</li>
 *   <li>requests Vert.x should never see are answered here, before any metric or body work
 *       ({@link RequestRefusals}, through each connection's {@link RequestGate});</li>
 *   <li>an answer written before its request body ended always carries {@code Connection: close}
 *       (from any route); such an answer ends in
 *       a lingering close: output shut, the rest of the body discarded (at most 256 KiB, 2 s), so
 *       the client reads the answer instead of a reset and no body is held.</li>
 * </ul>
 * The listening socket takes connections only once its server listens, and pauses while the
 * acceptor outruns the event loop ({@link AcceptPacing}). Connection state changes on the
 * connection's event loop; the sweep and the accept read it from the acceptor thread.
 */
@ChannelHandler.Sharable
public final class ConnectionGuard extends ChannelInboundHandlerAdapter {
  /**
   * Requests one connection carries at most; the answer to the last says {@code Connection: close}
   * and what is pipelined behind it is dropped. Bounds how long a reader, however slow, keeps one.
   */
  public static final int MAX_REQUESTS_PER_CONNECTION = 100;
  /**
   * Deadline closes queued on the event loop at once, at most: a probe's connection waits behind
   * at most this many, however many connections expire together.
   */
  public static final int MAX_EXPIRING = 64;

  private final HttpLimits limits;
  private final ConnectionCap cap;
  private final PerAddressLimit perAddress;
  private final AcceptPacing pacing = new AcceptPacing();
  private final DeadlineSweep sweep = new DeadlineSweep();
  private final GuardMeters meters;
  private final GuardedConnection.Shared shared;

  /**
   * @param listener the {@code listener} tag of this guard's meters: {@code api} or
   *     {@code management} (each listener has a guard of its own)
   */
  public ConnectionGuard(HttpLimits limits, HttpServerOptions serverOptions, MeterRegistry registry, String listener) {
    this.limits = limits;
    this.cap = new ConnectionCap(limits.maxConnections(), limits.probeReserve());
    this.perAddress = new PerAddressLimit(limits.maxConnectionsPerIp());
    this.meters = new GuardMeters(registry, listener, cap.openCount());
    this.shared = new GuardedConnection.Shared(limits, serverOptions, cap, pacing, meters);
  }

  public int open() {
    return cap.openCount().get();
  }

  /**
   * Lets the listening socket accept connections; call it once the HTTP server's listen has
   * completed (Vert.x has made its metrics). Until then connections wait in the kernel's queue.
   */
  public void startAccepting() {
    pacing.startAccepting();
  }

  /** Whether the listening socket takes connections now (tests). */
  public boolean accepting() {
    return pacing.accepting();
  }

  /** Connections without a request in progress (the ones a newcomer at the cap may replace). */
  public int waiting() {
    return cap.waiting();
  }

  /** Client addresses with an open connection, when the per-address limit is set (tests). */
  public int addressesHeld() {
    return perAddress.held();
  }

  /** The most deadline closes queued on event loops at once so far (tests). */
  public int mostExpiringAtOnce() {
    return sweep.mostExpiringAtOnce();
  }

  // --- the listening socket -------------------------------------------------------------------

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) {
    pacing.attach(ctx);
    sweep.start(ctx.executor(), limits.sweepMillis());
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) throws Exception {
    sweep.stop();
    super.channelInactive(ctx);
  }

  /** An accepted connection, before Vert.x (the acceptor thread). */
  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    Channel child = (Channel) msg;
    InetAddress address = perAddress.addressToCount(child);
    if (address != null && !perAddress.admit(address)) {
      meters.closed(CloseReason.PER_IP_LIMIT);
      child.unsafe().closeForcibly();
      return;
    }
    ConnectionCap.Admission admission = cap.admit();
    if (admission == ConnectionCap.Admission.REFUSED) {
      meters.closed(CloseReason.REFUSED);
      if (address != null) {
        perAddress.release(address);
      }
      child.unsafe().closeForcibly();
      return;
    }
    pacing.accepted(ctx);
    GuardedConnection c = new GuardedConnection(child, admission == ConnectionCap.Admission.PROBE_ONLY, shared);
    sweep.add(c);
    c.toWaiting();
    child.closeFuture().addListener(f -> {
      if (address != null) {
        perAddress.release(address);
      }
      cap.closed(c);
      sweep.remove(c);
      cap.forget(c);
    });
    child.pipeline().addFirst("rb-raw", c.raw);
    ctx.fireChannelRead(child);
  }
}
