package io.retrybudget.coordinator.http;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.retrybudget.coordinator.api.Problem;

/**
 * A connection's decoded HTTP/1.x messages, just before Vert.x: the requests and their bodies on
 * the way in, the answers on the way out. It refuses what {@link RequestRefusals} refuses, counts
 * requests against the connection's allowance, tells the {@link GuardedConnection} when a request's
 * headers and body end and when its answer is written, adds {@code Connection: close} to an answer
 * given before its request's body ended, and drops what is left of a refused or answered body.
 */
final class RequestGate extends ChannelDuplexHandler {
  private final GuardedConnection c;

  RequestGate(GuardedConnection c) {
    this.c = c;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (c.swallow || c.discarding || c.retired) {
      if (msg instanceof LastHttpContent) {
        c.swallow = false;
        if (c.answeredEarly) {
          c.bodyPending = false; // it did end: nothing to linger for
        }
      }
      ReferenceCountUtil.release(msg);
      return;
    }
    if (msg instanceof HttpRequest req) {
      Refusal refusal = RequestRefusals.refusal(req);
      if (refusal == null && c.probeOnly && !RequestRefusals.isProbe(req)) {
        refusal = RequestRefusals.notAProbe();
      }
      if (refusal != null) {
        // a request line that could not be read names no instance (CL with TE was read whole)
        boolean lineRead = !req.decoderResult().isFailure()
            || req.decoderResult().cause() instanceof LengthAndTransferEncoding;
        refusal = refusal.at(lineRead ? Problem.instanceOf(req.uri()) : null);
        boolean whole = msg instanceof LastHttpContent;
        ReferenceCountUtil.release(msg);
        c.swallow = !whole;
        refuse(ctx, refusal);
        return;
      }
      c.requests++;
      c.requestStarted(req);
    }
    boolean last = msg instanceof LastHttpContent;
    if (last) {
      c.requestEnded();
      c.retired = c.requests >= c.maxRequests;
    }
    ctx.fireChannelRead(msg);
  }

  @Override
  public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
    boolean finalAnswer = true;
    if (msg instanceof HttpResponse r) {
      finalAnswer = r.status().code() >= 200;
      c.answerStarted |= finalAnswer;
      if (finalAnswer && c.inFlight == 1 && (c.bodyPending || c.requests >= c.maxRequests)) {
        // the answer to a request whose body has not ended (from any route): the connection
        // ends with it, the rest of the body is discarded, never awaited on a kept-alive one
        r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        if (c.bodyPending && !c.swallow) {
          // nobody reads the rest of this body: dropped here as it is decoded, not handed to
          // Vert.x, and no more of it is read (a 401 to a 64 KiB unauthenticated upload)
          c.swallow = true;
          c.answeredEarly = true;
          if (c.ch.isActive()) {
            c.ch.config().setAutoRead(false);
          }
        }
      }
      if (finalAnswer && r.headers().containsValue(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE, true)) {
        c.closeAfterAnswer = true;
      }
    }
    if (finalAnswer && msg instanceof LastHttpContent) {
      ChannelPromise p = promise.unvoid();
      p.addListener(f -> c.answerWritten());
      ctx.write(msg, p);
    } else {
      ctx.write(msg, promise);
    }
  }

  void refuse(ChannelHandlerContext ctx, Refusal r) {
    if (c.inFlight > 0) {
      // pipelined behind requests Vert.x still answers: answers cannot overtake theirs, so this
      // one is answered after the last of them is written, then the connection ends (what is
      // pipelined behind it is dropped)
      c.deferred = r.closing();
      c.retired = true;
      return;
    }
    if (r.keepAlive()) {
      ctx.writeAndFlush(r.response());
      c.enter(GuardedConnection.Phase.IDLE, c.shared.idleNanos());
    } else {
      c.bodyPending |= c.swallow;
      ctx.writeAndFlush(r.response()).addListener(f -> c.lingerOrClose());
      c.discarding = true;
    }
  }
}
