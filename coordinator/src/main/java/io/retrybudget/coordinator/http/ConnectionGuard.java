package io.retrybudget.coordinator.http;

import io.retrybudget.coordinator.api.Problem;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.util.ReferenceCountUtil;
import io.vertx.core.http.HttpServerOptions;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.EnumMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Every HTTP connection's budget of sockets, time and bytes, enforced below Vert.x (on the
 * listening socket and in each connection's Netty pipeline), so that nothing an unauthenticated
 * client sends costs more than a bounded amount:
 * <ul>
 *   <li>at most {@link HttpLimits#maxConnections()} open connections; at the cap a new connection
 *       closes the one that has waited longest for a request (an idle keep-alive or one still in
 *       its headers, or one answered and lingering), else the one busy longest if that is over
 *       {@link #BUSY_EVICTABLE_MILLIS}; only when every request started within that is the new one
 *       closed at once, before Vert.x sees it;</li>
 *   <li>at most {@link HttpLimits#maxConnectionsPerIp()} open connections from one client address
 *       (when set): one more is closed at once, before it counts against the cap or evicts anyone;</li>
 *   <li>at most {@link #MAX_REQUESTS_PER_CONNECTION} requests per connection, and one deadline for
 *       a pipelined run of answers (not one per answer);</li>
 *   <li>one deadline per connection for the phase it is in: headers (from the accept or the first
 *       byte of a request), body (from the end of the headers), answer (from the end of the body to
 *       the last byte written) and idle keep-alive; a sweep closes connections past theirs;</li>
 *   <li>requests Vert.x should never see are answered here, before any metric or body work:
 *       unknown methods (501), HTTP versions but 1.1 and 1.0 (505), undecodable request lines or
 *       headers (400, 414, 431),
 *       Content-Length with Transfer-Encoding, and any Transfer-Encoding but exactly chunked (400,
 *       then close);</li>
 *   <li>an answer written before its request body ended always carries {@code Connection: close}
 *       (from any route); such an answer ends in
 *       a lingering close: output shut, the rest of the body discarded (at most 256 KiB, 2 s), so
 *       the client reads the answer instead of a reset and no body is held.</li>
 * </ul>
 * Connection state changes on the connection's event loop; the sweep and the accept read it from
 * the acceptor thread, hence the volatile fields.
 */
@ChannelHandler.Sharable
public final class ConnectionGuard extends ChannelInboundHandlerAdapter {
  private static final Logger LOG = Logger.getLogger(ConnectionGuard.class.getName());
  /** Standard methods (RFC 9110 section 9 and RFC 5789); anything else is 501 here. */
  static final Set<String> KNOWN_METHODS = Set.of("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS",
      "TRACE", "PATCH");
  static final long LINGER_MILLIS = 2_000;
  static final long LINGER_MAX_BYTES = 256 * 1024;
  /** Accepted connections waiting for the event loop to set them up, at most. */
  private static final int MAX_SETTING_UP = 64;
  /**
   * At the cap with nobody waiting, a connection whose requests have been under way this long
   * gives way to a newcomer (the one busy longest first): legitimate requests take milliseconds,
   * so a slot can only be held by opening new connections faster than this, not by one slow one.
   */
  static final long BUSY_EVICTABLE_MILLIS = 1_000;
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
  /** While more connections are past their deadline than one pass closes, the next pass after this. */
  static final long BACKLOG_PASS_MILLIS = 2;
  /** A reserve connection's headers must be complete this soon (a probe sends them at once). */
  static final long PROBE_HEADER_NANOS = TimeUnit.SECONDS.toNanos(1);

  enum Reason {
    REFUSED, PER_IP_LIMIT, EVICTED, HEADER_TIMEOUT, BODY_TIMEOUT, RESPONSE_TIMEOUT, IDLE_TIMEOUT;

    String tag() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  private enum Phase { HEADERS, BODY, ANSWER, IDLE, LINGER }

  private final HttpLimits limits;
  private final HttpServerOptions serverOptions;
  private final long headerNanos;
  private final long bodyNanos;
  private final long idleNanos;
  private final AtomicInteger open = new AtomicInteger();
  /** Evicted, not closed yet. */
  private final AtomicInteger evicting = new AtomicInteger();
  private final Set<Conn> all = ConcurrentHashMap.newKeySet();
  /** Connections without a request in progress, longest waiting first; guarded by itself. */
  private final LinkedHashSet<Conn> waiting = new LinkedHashSet<>();
  /** Connections with requests under way, busy longest first; guarded by {@link #waiting}. */
  private final LinkedHashSet<Conn> busy = new LinkedHashSet<>();
  private final Map<Reason, Counter> closed = new EnumMap<>(Reason.class);
  /** Accepted, not yet set up by the event loop: while many are, accepting pauses (see {@link #channelRead}). */
  private final AtomicInteger settingUp = new AtomicInteger();
  /** Open connections admitted over the cap for a health probe: at most {@link HttpLimits#probeReserve()}. */
  private final AtomicInteger reserved = new AtomicInteger();
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
  private final AtomicBoolean sweeping = new AtomicBoolean();
  private volatile ScheduledFuture<?> sweep;
  /** Deadline closes handed to event loops and not run yet: at most {@link #MAX_EXPIRING}. */
  private final AtomicInteger expiring = new AtomicInteger();
  // the acceptor thread (the sweep's) only:
  private io.netty.util.concurrent.EventExecutor sweeper;
  private boolean backlogPass;
  private volatile int mostExpiring;
  /**
   * Open connections by client address, when {@link HttpLimits#maxConnectionsPerIp()} is set: an
   * address is here while it has an open connection, so there are at most as many entries as
   * connections.
   */
  private final ConcurrentHashMap<InetAddress, Integer> perAddress = new ConcurrentHashMap<>();

  /**
   * @param listener the {@code listener} tag of this guard's meters: {@code api} or
   *     {@code management} (each listener has a guard of its own)
   */
  public ConnectionGuard(HttpLimits limits, HttpServerOptions serverOptions, MeterRegistry registry, String listener) {
    this.limits = limits;
    this.serverOptions = serverOptions;
    this.headerNanos = TimeUnit.MILLISECONDS.toNanos(limits.headerTimeoutMillis());
    this.bodyNanos = TimeUnit.MILLISECONDS.toNanos(limits.bodyTimeoutMillis());
    this.idleNanos = TimeUnit.MILLISECONDS.toNanos(limits.idleTimeoutMillis());
    Gauge.builder("retry.budget.http.connections", open, AtomicInteger::get).tag("listener", listener)
        .description("Open HTTP connections (at most COORDINATOR_MAX_CONNECTIONS on the API listener, "
            + "COORDINATOR_MANAGEMENT_MAX_CONNECTIONS on the management listener)").register(registry);
    for (Reason r : Reason.values()) {
      closed.put(r, Counter.builder("retry.budget.http.connections.closed").tag("reason", r.tag())
          .tag("listener", listener)
          .description("HTTP connections the coordinator closed to protect itself, by reason").register(registry));
    }
  }

  public int open() {
    return open.get();
  }

  /**
   * Lets the listening socket accept connections; call it once the HTTP server's listen has
   * completed (Vert.x has made its metrics). Until then connections wait in the kernel's queue.
   */
  public void startAccepting() {
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

  /** Whether the listening socket takes connections now (tests). */
  public boolean accepting() {
    ChannelHandlerContext l = listening;
    return accepting && l != null && l.channel().config().isAutoRead();
  }

  /** Connections without a request in progress (the ones a newcomer at the cap may replace). */
  public int waiting() {
    synchronized (waiting) {
      return waiting.size();
    }
  }

  // --- the listening socket -------------------------------------------------------------------

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) {
    listening = ctx;
    listener = ctx.channel();
    if (!accepting) {
      ctx.channel().config().setAutoRead(false); // before the bind: nothing is accepted until startAccepting()
      if (accepting) {
        ctx.channel().config().setAutoRead(true); // (it was called meanwhile)
      }
    }
    if (sweeping.compareAndSet(false, true)) {
      long every = limits.sweepMillis();
      sweeper = ctx.executor();
      sweep = ctx.executor().scheduleAtFixedRate(this::sweep, every, every, TimeUnit.MILLISECONDS);
    }
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) throws Exception {
    ScheduledFuture<?> s = sweep;
    if (s != null) {
      s.cancel(false);
    }
    super.channelInactive(ctx);
  }

  /** An accepted connection, before Vert.x (the acceptor thread). */
  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    Channel child = (Channel) msg;
    InetAddress address = limits.maxConnectionsPerIp() > 0 ? addressOf(child) : null;
    if (address != null && !admitFrom(address)) {
      closed.get(Reason.PER_IP_LIMIT).increment();
      child.unsafe().closeForcibly();
      return;
    }
    // an evicted connection still closing no longer counts: the accept gating below bounds how many
    // can be closing at once, so descriptors stay within the cap plus a few dozen
    int now = open.get() - evicting.get();
    boolean probeOnly = false;
    if (now >= limits.maxConnections() && !evictLongestWaiting()) {
      if (reserved.get() >= limits.probeReserve()) {
        closed.get(Reason.REFUSED).increment();
        if (address != null) {
          release(address);
        }
        child.unsafe().closeForcibly();
        return;
      }
      // every slot carries a young request: one of the reserve's, for a health probe only
      probeOnly = true;
      reserved.incrementAndGet();
    }
    open.incrementAndGet();
    if (settingUp.incrementAndGet() >= MAX_SETTING_UP) {
      // the acceptor outruns the event loop: let the kernel queue hold the rest, so the event loop's
      // own queue (where a health probe's connection waits too) stays short
      listener = ctx.channel();
      ctx.channel().config().setAutoRead(false);
      if (settingUp.get() < MAX_SETTING_UP / 2) {
        ctx.channel().config().setAutoRead(true); // the event loop caught up meanwhile
      }
    }
    Conn c = new Conn(child, probeOnly);
    all.add(c);
    c.toWaiting();
    child.closeFuture().addListener(f -> {
      if (address != null) {
        release(address);
      }
      open.decrementAndGet();
      if (c.probeOnly) {
        reserved.decrementAndGet();
      }
      all.remove(c);
      synchronized (waiting) {
        waiting.remove(c);
        busy.remove(c);
      }
    });
    child.pipeline().addFirst("rb-raw", c.raw);
    ctx.fireChannelRead(child);
  }

  private static InetAddress addressOf(Channel child) {
    return child.remoteAddress() instanceof InetSocketAddress a ? a.getAddress() : null;
  }

  /** Counts a connection from {@code address}; false (and nothing counted) when it has its limit already. */
  private boolean admitFrom(InetAddress address) {
    int limit = limits.maxConnectionsPerIp();
    boolean[] admitted = {false};
    perAddress.compute(address, (a, n) -> {
      int held = n == null ? 0 : n;
      admitted[0] = held < limit;
      return admitted[0] ? held + 1 : n;
    });
    return admitted[0];
  }

  private void release(InetAddress address) {
    perAddress.computeIfPresent(address, (a, n) -> n <= 1 ? null : n - 1);
  }

  /** Client addresses with an open connection, when the per-address limit is set (tests). */
  public int addressesHeld() {
    return perAddress.size();
  }

  private boolean evictLongestWaiting() {
    Conn victim = null;
    synchronized (waiting) {
      // closed ones may linger in the sets a moment (a close on the event loop): skipped
      for (Iterator<Conn> it = waiting.iterator(); victim == null && it.hasNext(); ) {
        Conn w = it.next();
        it.remove();
        victim = w.ch.isOpen() ? w : null;
      }
      for (Iterator<Conn> b = busy.iterator(); victim == null && b.hasNext(); ) {
        Conn w = b.next();
        if (w.ch.isOpen()
            && System.nanoTime() - w.busySince < TimeUnit.MILLISECONDS.toNanos(BUSY_EVICTABLE_MILLIS)) {
          return false; // the longest busy is young: every request is under way
        }
        b.remove();
        victim = w.ch.isOpen() ? w : null;
      }
    }
    if (victim == null) {
      return false;
    }
    if (victim.closing.get()) {
      return true; // closing anyway (a deadline passed): its descriptor is on its way back
    }
    evicting.incrementAndGet();
    victim.ch.closeFuture().addListener(f -> evicting.decrementAndGet());
    victim.closeFor(Reason.EVICTED);
    return true;
  }

  /**
   * Closes the connections past their deadline, at most {@link #MAX_EXPIRING} at a time: each close
   * (and 408) is a task on the connection's event loop, and a mass expiry (3,000 bodies that all
   * began within two seconds) queued at once would put a health probe's accept behind all of them.
   * While more are due, the next pass follows after {@link #BACKLOG_PASS_MILLIS}, and a pass only
   * issues as many as the event loop has finished (self-clocked). Runs on the acceptor thread.
   */
  private void sweep() {
    long now = System.nanoTime();
    boolean more = false;
    for (Conn c : all) {
      if (now - c.deadline > 0 && !c.picked && !c.closing.get()) {
        if (expiring.get() >= MAX_EXPIRING) {
          more = true;
          break;
        }
        int queued = expiring.incrementAndGet();
        if (queued > mostExpiring) {
          mostExpiring = queued;
        }
        c.expire();
      }
    }
    if (more && !backlogPass && sweeper != null && !sweeper.isShuttingDown()) {
      backlogPass = true;
      try {
        sweeper.schedule(() -> {
          backlogPass = false;
          sweep();
        }, BACKLOG_PASS_MILLIS, TimeUnit.MILLISECONDS);
      } catch (java.util.concurrent.RejectedExecutionException stopping) {
        backlogPass = false; // the server is stopping: its connections close with it
      }
    }
  }

  /** The most deadline closes queued on event loops at once so far (tests). */
  public int mostExpiringAtOnce() {
    return mostExpiring;
  }

  // --- one connection ---------------------------------------------------------------------------

  private final class Conn {
    final Channel ch;
    final AtomicBoolean closing = new AtomicBoolean();
    /** Picked by the sweep, its expiry task not run yet. */
    volatile boolean picked;
    volatile Phase phase = Phase.HEADERS;
    volatile long deadline;
    /** When its requests came under way (the first of a pipelined run). */
    volatile long busySince;
    // the connection's event loop only:
    int inFlight; // requests handed to Vert.x whose answer is not written yet
    boolean bodyPending; // the latest request's body has not ended
    boolean closeAfterAnswer;
    boolean swallow; // drop decoded messages up to the end of a refused request
    boolean discarding; // lingering: raw bytes are dropped
    int requests; // requests handed to Vert.x so far
    boolean retired; // the last request allowed has ended: the rest is dropped
    boolean partialRequest; // bytes of a request came, its headers have not ended
    Refusal deferred; // a pipelined request refused behind answers not written yet
    boolean answeredEarly; // answered before its body ended: the rest of the body is dropped
    boolean answerStarted; // the answer to the request in progress has begun
    long discarded;
    final RawWatch raw = new RawWatch();
    final Gate gate = new Gate();

    /** Admitted over the cap, from the reserve: one request, a health probe, else 503. */
    final boolean probeOnly;
    final int maxRequests;

    Conn(Channel ch, boolean probeOnly) {
      this.ch = ch;
      this.probeOnly = probeOnly;
      this.maxRequests = probeOnly ? 1 : MAX_REQUESTS_PER_CONNECTION;
      this.deadline = System.nanoTime() + (probeOnly ? Math.min(headerNanos, PROBE_HEADER_NANOS) : headerNanos);
    }

    /** Among the connections a newcomer at the cap may replace (never a reserve one). */
    void toWaiting() {
      synchronized (waiting) {
        busy.remove(this);
        if (ch.isOpen() && !probeOnly) {
          waiting.add(this);
        }
      }
    }

    private boolean counted;

    /** Once per connection: it no longer waits for the event loop. */
    void setUp() {
      if (!counted) {
        counted = true;
        if (settingUp.decrementAndGet() < MAX_SETTING_UP / 2) {
          Channel l = listener;
          if (l != null && accepting && !l.config().isAutoRead()) {
            l.config().setAutoRead(true);
          }
        }
      }
    }

    /** Past its deadline (the sweep, any thread): the close runs on the connection's event loop. */
    void expire() {
      picked = true;
      try {
        ch.eventLoop().execute(this::expired);
      } catch (java.util.concurrent.RejectedExecutionException shuttingDown) {
        ConnectionGuard.this.expiring.decrementAndGet();
        ch.close();
      }
    }

    /**
     * The expiry, on the event loop: a request whose headers or body did not come in time is
     * answered 408 (when nothing of its answer was sent) and closed; anything else is closed.
     */
    private void expired() {
      try {
        if (!ch.isOpen() || System.nanoTime() - deadline <= 0) {
          return; // closed meanwhile, or its phase moved on (a request began)
        }
        switch (phase) {
          case HEADERS -> timedOut(Reason.HEADER_TIMEOUT, partialRequest && inFlight == 0, "header",
              limits.headerTimeoutMillis());
          case BODY -> timedOut(Reason.BODY_TIMEOUT, inFlight == 1 && !answerStarted, "body",
              limits.bodyTimeoutMillis());
          case ANSWER -> closeFor(Reason.RESPONSE_TIMEOUT);
          case IDLE -> closeFor(Reason.IDLE_TIMEOUT);
          case LINGER -> closeFor(null);
        }
      } finally {
        picked = false;
        ConnectionGuard.this.expiring.decrementAndGet();
      }
    }

    /** RFC 9110 section 15.5.9: 408 and close, written below Vert.x (which may hold the request). */
    private void timedOut(Reason reason, boolean answer, String field, int millis) {
      ChannelHandlerContext rawCtx = ch.pipeline().context(raw);
      if (!answer || rawCtx == null || !closing.compareAndSet(false, true)) {
        closeFor(reason);
        return;
      }
      closed.get(reason).increment();
      discarding = true;
      byte[] body = Problem.of(408, field, "the request's " + (field.equals("header") ? "headers" : "body")
          + " did not arrive within " + millis + " ms", field.equals("body") ? target : null).encode().getBytes(StandardCharsets.UTF_8);
      byte[] head = ("HTTP/1.1 408 Request Timeout\r\nContent-Type: " + Problem.CONTENT_TYPE + "\r\nContent-Length: " + body.length
          + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
      // what the socket takes now is sent before the close; a client that reads nothing loses the answer
      rawCtx.writeAndFlush(Unpooled.wrappedBuffer(head, body));
      ch.close();
    }

    void closeFor(Reason reason) {
      if (closing.compareAndSet(false, true)) {
        if (reason != null) {
          closed.get(reason).increment();
        }
        ch.close();
      }
    }

    void enter(Phase p, long timeoutNanos) {
      deadline = System.nanoTime() + timeoutNanos;
      phase = p;
    }

    void waitForRequest() {
      enter(Phase.IDLE, idleNanos);
      toWaiting();
    }

    /** The path of the request that began last (a late body's 408 names it). */
    private String target;

    void requestStarted(HttpRequest req) {
      // a request without a body ends with the empty last content right behind it, possibly after
      // Vert.x answered it: only a declared body can be pending at the answer
      HttpHeaders h = req.headers();
      String length = h.get(HttpHeaderNames.CONTENT_LENGTH);
      partialRequest = false;
      target = Problem.instanceOf(req.uri());
      bodyPending = !(req instanceof LastHttpContent)
          && (h.contains(HttpHeaderNames.TRANSFER_ENCODING) || (length != null && !"0".equals(length)));
      if (inFlight++ > 0) {
        return; // pipelined behind answers not written yet: the run's deadline holds, not a new one
      }
      busySince = System.nanoTime();
      synchronized (waiting) {
        waiting.remove(this);
        if (ch.isOpen() && !probeOnly) {
          busy.add(this);
        }
      }
      enter(Phase.BODY, bodyNanos);
    }

    void requestEnded() {
      bodyPending = false;
      if (phase == Phase.BODY && inFlight == 1) {
        enter(Phase.ANSWER, bodyNanos);
      }
    }

    void answerWritten() {
      inFlight--;
      answerStarted = false;
      if (inFlight <= 0 && deferred != null && !closeAfterAnswer && ch.isOpen()) {
        // (after an answer that said Connection: close, nothing more is sent)
        Refusal r = deferred;
        deferred = null;
        inFlight = 0;
        bodyPending = true; // linger: the client reads every answer, then the FIN
        ChannelHandlerContext g = ch.pipeline().context(gate);
        if (g != null) {
          gate.refuse(g, r);
        } else {
          ch.close();
        }
        return;
      }
      if (closeAfterAnswer || bodyPending && inFlight <= 0) {
        // answered before its body ended: never kept alive (the guard added Connection: close)
        lingerOrClose();
      } else if (inFlight <= 0) {
        inFlight = 0;
        waitForRequest();
      }
      // else a pipelined request is next, within the same deadline: a slow reader gets no more
      // time per answer, so a run of pipelined answers ends within one answer deadline
    }

    /** After an answer with Connection: close. */
    void lingerOrClose() {
      if (!bodyPending || !(ch instanceof SocketChannel s) || !ch.isActive()) {
        // (a closed channel is deregistered: setting its auto-read would throw inside Netty)
        ch.close();
        return;
      }
      discarding = true;
      enter(Phase.LINGER, TimeUnit.MILLISECONDS.toNanos(LINGER_MILLIS));
      toWaiting(); // answered: the first to give way at the cap
      s.shutdownOutput();
      // the rest of the body is not even read: the client has the answer and the FIN; what it still
      // sends waits in the kernel until the close at the deadline (or is dropped when it ends first)
      s.config().setAutoRead(false);
    }

    /** Installs the gate once Vert.x has set up the HTTP/1.x pipeline. */
    void install(ChannelPipeline p) {
      if (!VertxInternals.install(p, serverOptions, gate, "rb-gate")) {
        String why;
        try {
          VertxInternals.checkPipeline(p.names(), VertxInternals.version());
          why = "unexpected HTTP pipeline " + p.names();
        } catch (IllegalStateException e) {
          why = e.getMessage();
        }
        LOG.severe(why + "; closing the connection");
        ch.close();
      }
    }

    /** Raw bytes, first in the pipeline. */
    final class RawWatch extends ChannelInboundHandlerAdapter {
      @Override
      public void channelActive(ChannelHandlerContext ctx) throws Exception {
        setUp();
        install(ctx.pipeline());
        super.channelActive(ctx);
      }

      @Override
      public void channelUnregistered(ChannelHandlerContext ctx) throws Exception {
        setUp(); // closed before it was active
        super.channelUnregistered(ctx);
      }

      @Override
      public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (discarding) {
          if (msg instanceof ByteBuf b) {
            discarded += b.readableBytes();
          }
          ReferenceCountUtil.release(msg);
          if (discarded > LINGER_MAX_BYTES) {
            ch.close();
          }
          return;
        }
        if (phase == Phase.IDLE) {
          enter(Phase.HEADERS, headerNanos); // still waiting (evictable) until the headers end
        }
        if (phase == Phase.HEADERS) {
          partialRequest = true;
        }
        ctx.fireChannelRead(msg);
      }
    }

    /** Decoded HTTP/1.x messages, just before Vert.x. */
    final class Gate extends ChannelDuplexHandler {
      @Override
      public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (swallow || discarding || retired) {
          if (msg instanceof LastHttpContent) {
            swallow = false;
            if (answeredEarly) {
              bodyPending = false; // it did end: nothing to linger for
            }
          }
          ReferenceCountUtil.release(msg);
          return;
        }
        if (msg instanceof HttpRequest req) {
          Refusal refusal = refusal(req);
          if (refusal == null && probeOnly && !isProbe(req)) {
            refusal = new Refusal(HttpResponseStatus.SERVICE_UNAVAILABLE, null, "at the connection cap "
                + "(COORDINATOR_MAX_CONNECTIONS): only /health/live and /health/ready are answered now; retry", false);
          }
          if (refusal != null) {
            // a request line that could not be read names no instance (CL with TE was read whole)
            boolean lineRead = !req.decoderResult().isFailure()
                || req.decoderResult().cause() instanceof LengthAndTransferEncoding;
            refusal = refusal.at(lineRead ? Problem.instanceOf(req.uri()) : null);
            boolean whole = msg instanceof LastHttpContent;
            ReferenceCountUtil.release(msg);
            swallow = !whole;
            refuse(ctx, refusal);
            return;
          }
          requests++;
          requestStarted(req);
        }
        boolean last = msg instanceof LastHttpContent;
        if (last) {
          requestEnded();
          retired = requests >= maxRequests;
        }
        ctx.fireChannelRead(msg);
      }

      @Override
      public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        boolean finalAnswer = true;
        if (msg instanceof HttpResponse r) {
          finalAnswer = r.status().code() >= 200;
          answerStarted |= finalAnswer;
          if (finalAnswer && inFlight == 1 && (bodyPending || requests >= maxRequests)) {
            // the answer to a request whose body has not ended (from any route): the connection
            // ends with it, the rest of the body is discarded, never awaited on a kept-alive one
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            if (bodyPending && !swallow) {
              // nobody reads the rest of this body: dropped here as it is decoded, not handed to
              // Vert.x, and no more of it is read (a 401 to a 64 KiB unauthenticated upload)
              swallow = true;
              answeredEarly = true;
              if (ch.isActive()) {
                ch.config().setAutoRead(false);
              }
            }
          }
          if (finalAnswer && r.headers().containsValue(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE, true)) {
            closeAfterAnswer = true;
          }
        }
        if (finalAnswer && msg instanceof LastHttpContent) {
          ChannelPromise p = promise.unvoid();
          p.addListener(f -> answerWritten());
          ctx.write(msg, p);
        } else {
          ctx.write(msg, promise);
        }
      }

      private void refuse(ChannelHandlerContext ctx, Refusal r) {
        if (inFlight > 0) {
          // pipelined behind requests Vert.x still answers: answers cannot overtake theirs, so this
          // one is answered after the last of them is written, then the connection ends (what is
          // pipelined behind it is dropped)
          deferred = r.closing();
          retired = true;
          return;
        }
        byte[] body = r.status().code() == 204 ? new byte[0] : r.json().getBytes(StandardCharsets.UTF_8);
        DefaultFullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, r.status(),
            Unpooled.wrappedBuffer(body));
        HttpHeaders h = res.headers();
        if (body.length > 0) {
          h.set(HttpHeaderNames.CONTENT_TYPE, Problem.CONTENT_TYPE);
        }
        h.set(HttpHeaderNames.CONTENT_LENGTH, body.length);
        if (r.allow() != null) {
          h.set(HttpHeaderNames.ALLOW, r.allow());
        }
        if (!r.keepAlive()) {
          h.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
        if (r.status().equals(HttpResponseStatus.SERVICE_UNAVAILABLE)) {
          h.set(HttpHeaderNames.RETRY_AFTER, "1");
        }
        if (r.keepAlive()) {
          ctx.writeAndFlush(res);
          enter(Phase.IDLE, idleNanos);
        } else {
          bodyPending |= swallow;
          ctx.writeAndFlush(res).addListener(f -> lingerOrClose());
          discarding = true;
        }
      }
    }
  }

  /** A request answered here, before Vert.x; its body a problem ({@link Problem}) about {@code instance}. */
  private record Refusal(HttpResponseStatus status, String field, String message, boolean keepAlive, String allow,
      String instance) {
    Refusal(HttpResponseStatus status, String field, String message, boolean keepAlive) {
      this(status, field, message, keepAlive, null, null);
    }

    Refusal(HttpResponseStatus status, String field, String message, boolean keepAlive, String allow) {
      this(status, field, message, keepAlive, allow, null);
    }

    Refusal closing() {
      return new Refusal(status, field, message, false, allow, instance);
    }

    Refusal at(String target) {
      return new Refusal(status, field, message, keepAlive, allow, target);
    }

    String json() {
      // the only 503 here: the connection cap (Redis's 503s come from the routes)
      Problem.Type type = status.code() == 503 ? Problem.Type.OVERLOADED : Problem.Type.forStatus(status.code());
      return Problem.of(type, status.code(), field, message, instance).encode();
    }
  }

  /** GET or HEAD of /health/live or /health/ready: what a reserve connection may ask. */
  private static boolean isProbe(HttpRequest req) {
    String method = req.method().name();
    String uri = req.uri();
    int q = uri.indexOf('?');
    String path = q < 0 ? uri : uri.substring(0, q);
    return (method.equals("GET") || method.equals("HEAD")) && (path.equals("/health/live") || path.equals("/health/ready"));
  }

  private static Refusal refusal(HttpRequest req) {
    if (req.decoderResult().isFailure()) {
      Throwable cause = req.decoderResult().cause();
      if (cause instanceof LengthAndTransferEncoding) {
        return new Refusal(HttpResponseStatus.BAD_REQUEST, "header",
            "Content-Length and Transfer-Encoding must not be sent together", false);
      }
      if (cause instanceof TooLongHttpLineException) {
        return new Refusal(HttpResponseStatus.REQUEST_URI_TOO_LONG, "path", "request line too long", false);
      }
      if (cause instanceof TooLongHttpHeaderException || cause instanceof TooLongFrameException) {
        return new Refusal(HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "header", "headers too large", false);
      }
      LOG.log(Level.FINE, "undecodable request", cause);
      return new Refusal(HttpResponseStatus.BAD_REQUEST, "header", "malformed request line or header", false);
    }
    HttpHeaders headers = req.headers();
    if (headers.contains(HttpHeaderNames.TRANSFER_ENCODING)) {
      // RFC 9112 section 6.3: only chunked is read here; any other coding (xchunked, gzip, chunked
      // with another) or a second header would leave the body's end to guesswork: refused, closed
      java.util.List<String> te = headers.getAll(HttpHeaderNames.TRANSFER_ENCODING);
      if (headers.contains(HttpHeaderNames.CONTENT_LENGTH)) {
        return new Refusal(HttpResponseStatus.BAD_REQUEST, "header",
            "Content-Length and Transfer-Encoding must not be sent together", false);
      }
      if (te.size() != 1 || !"chunked".equalsIgnoreCase(te.get(0).trim()) || req.protocolVersion() != HttpVersion.HTTP_1_1) {
        return new Refusal(HttpResponseStatus.BAD_REQUEST, "header",
            "Transfer-Encoding must be exactly chunked (HTTP/1.1)", false);
      }
    }
    String method = req.method().name();
    if (!KNOWN_METHODS.contains(method)) {
      HttpHeaders h = req.headers();
      boolean noBody = !h.contains(HttpHeaderNames.TRANSFER_ENCODING)
          && (!h.contains(HttpHeaderNames.CONTENT_LENGTH) || "0".equals(h.get(HttpHeaderNames.CONTENT_LENGTH)));
      boolean keepAlive = noBody && req.protocolVersion() == HttpVersion.HTTP_1_1
          && !h.containsValue(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE, true);
      return new Refusal(HttpResponseStatus.NOT_IMPLEMENTED, "method", "unknown method", keepAlive);
    }
    // HTTP/1.1 and 1.0 only, exactly as written (the protocol name is case-sensitive, RFC 9112
    // section 2.3; Netty keeps its constants for exactly these two): anything else is 505, in
    // HTTP/1.1, then close, as what follows cannot be trusted to be framed alike (checked after
    // the method: an HTTP/2 preface, PRI, stays 501)
    HttpVersion version = req.protocolVersion();
    if (version != HttpVersion.HTTP_1_1 && version != HttpVersion.HTTP_1_0) {
      String text = version.text();
      // Netty upper-cases what it parsed: "http/1.1" arrives as HTTP/1.1 in another object
      String why = text.equals("HTTP/1.1") || text.equals("HTTP/1.0")
          ? "the HTTP version is case-sensitive: use HTTP/1.1, in capitals"
          : "HTTP version " + (text.length() > 20 ? text.substring(0, 20) + "..." : text) + " is not supported; use HTTP/1.1";
      return new Refusal(HttpResponseStatus.HTTP_VERSION_NOT_SUPPORTED, "version", why, false);
    }
    // RFC 9112 section 3.2: an HTTP/1.1 request without Host, any request with two, or with a Host
    // that is no host[:port], is 400
    java.util.List<String> hosts = headers.getAll(HttpHeaderNames.HOST);
    if (hosts.size() > 1 || (hosts.isEmpty() && req.protocolVersion() == HttpVersion.HTTP_1_1)) {
      return new Refusal(HttpResponseStatus.BAD_REQUEST, "header", hosts.isEmpty()
          ? "an HTTP/1.1 request needs a Host header" : "more than one Host header", false);
    }
    if (hosts.size() == 1 && !HOST_VALUE.matcher(hosts.get(0)).matches()) {
      return new Refusal(HttpResponseStatus.BAD_REQUEST, "header", "Host is not a host[:port]", false);
    }
    if (req.uri().equals("*")) {
      // the asterisk-form (RFC 9112 section 3.2.4): OPTIONS asks about the server as a whole
      if (!method.equals("OPTIONS")) {
        return new Refusal(HttpResponseStatus.BAD_REQUEST, "path", "* is a target for OPTIONS only", false);
      }
      boolean noBody = !headers.contains(HttpHeaderNames.TRANSFER_ENCODING)
          && (!headers.contains(HttpHeaderNames.CONTENT_LENGTH) || "0".equals(headers.get(HttpHeaderNames.CONTENT_LENGTH)));
      boolean keepAlive = noBody && req.protocolVersion() == HttpVersion.HTTP_1_1
          && !headers.containsValue(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE, true);
      return new Refusal(HttpResponseStatus.NO_CONTENT, null, null, keepAlive, SERVER_METHODS);
    }
    return null;
  }

  /** reg-name or IPv4 (RFC 3986 characters), or an IPv6 literal in brackets; an optional port. */
  private static final java.util.regex.Pattern HOST_VALUE = java.util.regex.Pattern.compile(
      "(?:[A-Za-z0-9._~!$&'()*+,;=%-]*|\\[[0-9A-Fa-f:.]+])(?::[0-9]{0,5})?");
  /** What OPTIONS * answers: every method some path here serves. */
  public static final String SERVER_METHODS = "GET, HEAD, PUT, POST, DELETE, OPTIONS";
}
