package io.retrybudget.coordinator.http;

import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.LastHttpContent;
import io.retrybudget.coordinator.api.Problem;
import io.vertx.core.http.HttpServerOptions;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Logger;

/**
 * One connection's state under the connection guard: the phase it is in (headers, body, answer,
 * idle keep-alive, lingering close) with that phase's deadline, its requests in flight, and what is
 * left to drop of a body nobody reads. Its {@link RawBytesWatch} and {@link RequestGate} report
 * what arrives and what is written; the {@link DeadlineSweep} reports a passed deadline.
 *
 * <p>The phase, deadline, busy time and closing flag are read from the acceptor thread (the sweep
 * and the cap), hence volatile; everything else changes on the connection's event loop only.
 */
final class GuardedConnection {
  private static final Logger LOG = Logger.getLogger(ConnectionGuard.class.getName());
  static final long LINGER_MILLIS = 2_000;
  /** A reserve connection's headers must be complete this soon (a probe sends them at once). */
  static final long PROBE_HEADER_NANOS = TimeUnit.SECONDS.toNanos(1);

  enum Phase { HEADERS, BODY, ANSWER, IDLE, LINGER }

  /** What every connection of one guard shares: its limits (and their deadlines in nanoseconds) and policies. */
  record Shared(HttpLimits limits, HttpServerOptions serverOptions, long headerNanos, long bodyNanos, long idleNanos,
      ConnectionCap cap, AcceptPacing pacing, GuardMeters meters) {
    Shared(HttpLimits limits, HttpServerOptions serverOptions, ConnectionCap cap, AcceptPacing pacing, GuardMeters meters) {
      this(limits, serverOptions, TimeUnit.MILLISECONDS.toNanos(limits.headerTimeoutMillis()),
          TimeUnit.MILLISECONDS.toNanos(limits.bodyTimeoutMillis()), TimeUnit.MILLISECONDS.toNanos(limits.idleTimeoutMillis()),
          cap, pacing, meters);
    }
  }

  final Shared shared;
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
  final RawBytesWatch raw = new RawBytesWatch(this);
  final RequestGate gate = new RequestGate(this);

  static final int EVICT_NONE = 0;
  static final int EVICT_COUNTED = 1; // evicted and counted as closing ({@code ConnectionCap})
  static final int EVICT_CLOSED = 2;
  /** Whether {@code ConnectionCap} counts it as evicted and closing, or saw it closed. */
  final java.util.concurrent.atomic.AtomicInteger evictState = new java.util.concurrent.atomic.AtomicInteger();

  /** Admitted over the cap, from the reserve: one request, a health probe, else 503. */
  final boolean probeOnly;
  final int maxRequests;
  private boolean counted;
  /** The path of the request that began last (a late body's 408 names it). */
  private String target;

  GuardedConnection(Channel ch, boolean probeOnly, Shared shared) {
    this.shared = shared;
    this.ch = ch;
    this.probeOnly = probeOnly;
    this.maxRequests = probeOnly ? 1 : ConnectionGuard.MAX_REQUESTS_PER_CONNECTION;
    this.deadline = System.nanoTime()
        + (probeOnly ? Math.min(shared.headerNanos(), PROBE_HEADER_NANOS) : shared.headerNanos());
  }

  /** Among the connections a newcomer at the cap may replace (never a reserve one). */
  void toWaiting() {
    shared.cap().toWaiting(this);
  }

  /** Once per connection: it no longer waits for the event loop. */
  void setUp() {
    if (!counted) {
      counted = true;
      shared.pacing().setUp();
    }
  }

  /**
   * Its deadline passed (on the event loop): a request whose headers or body did not come in time is
   * answered 408 (when nothing of its answer was sent) and closed; anything else is closed.
   */
  void deadlinePassed() {
    switch (phase) {
      case HEADERS -> timedOut(CloseReason.HEADER_TIMEOUT, partialRequest && inFlight == 0, "header",
          shared.limits().headerTimeoutMillis());
      case BODY -> timedOut(CloseReason.BODY_TIMEOUT, inFlight == 1 && !answerStarted, "body",
          shared.limits().bodyTimeoutMillis());
      case ANSWER -> closeFor(CloseReason.RESPONSE_TIMEOUT);
      case IDLE -> closeFor(CloseReason.IDLE_TIMEOUT);
      case LINGER -> closeFor(null);
    }
  }

  /** RFC 9110 section 15.5.9: 408 and close, written below Vert.x (which may hold the request). */
  private void timedOut(CloseReason reason, boolean answer, String field, int millis) {
    ChannelHandlerContext rawCtx = ch.pipeline().context(raw);
    if (!answer || rawCtx == null || !closing.compareAndSet(false, true)) {
      closeFor(reason);
      return;
    }
    shared.meters().closed(reason);
    discarding = true;
    byte[] body = Problem.of(408, field, "the request's " + (field.equals("header") ? "headers" : "body")
        + " did not arrive within " + millis + " ms", field.equals("body") ? target : null).encode().getBytes(StandardCharsets.UTF_8);
    byte[] head = ("HTTP/1.1 408 Request Timeout\r\nContent-Type: " + Problem.CONTENT_TYPE + "\r\nContent-Length: " + body.length
        + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
    // what the socket takes now is sent before the close; a client that reads nothing loses the answer
    rawCtx.writeAndFlush(Unpooled.wrappedBuffer(head, body));
    ch.close();
  }

  void closeFor(CloseReason reason) {
    if (closing.compareAndSet(false, true)) {
      if (reason != null) {
        shared.meters().closed(reason);
      }
      ch.close();
    }
  }

  void enter(Phase p, long timeoutNanos) {
    deadline = System.nanoTime() + timeoutNanos;
    phase = p;
  }

  void waitForRequest() {
    enter(Phase.IDLE, shared.idleNanos());
    toWaiting();
  }

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
    shared.cap().toBusy(this);
    enter(Phase.BODY, shared.bodyNanos());
  }

  void requestEnded() {
    bodyPending = false;
    if (phase == Phase.BODY && inFlight == 1) {
      enter(Phase.ANSWER, shared.bodyNanos());
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
    if (!VertxInternals.install(p, shared.serverOptions(), gate, "rb-gate")) {
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
}
