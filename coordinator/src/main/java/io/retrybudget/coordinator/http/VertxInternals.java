package io.retrybudget.coordinator.http;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.HttpMessage;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.impl.VertxHttpRequestDecoder;
import io.vertx.core.internal.VertxInternal;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Every use of Vert.x internals in the coordinator, and nothing else: where Vert.x has no public API
 * for what the coordinator needs, this is the one place a Vert.x upgrade can break it. A test checks
 * that no other class imports an {@code impl} or {@code internal} package of Vert.x.
 *
 * <ul>
 *   <li>the Netty event loop group of a Vert.x instance, to run Lettuce on the same threads
 *       ({@link VertxInternal#nettyEventLoopGroup()});
 *   <li>Vert.x's HTTP/1.x request decoder, subclassed to mark a request with both Content-Length and
 *       Transfer-Encoding ({@link VertxHttpRequestDecoder});
 *   <li>the names Vert.x gives the handlers of an HTTP/1.x connection's pipeline ({@value #DECODER}
 *       and {@value #HANDLER}), where the connection guard puts the strict decoder and its gate.
 * </ul>
 *
 * <p>{@link #checkPipeline} is the check of the last: before the coordinator listens it runs on the
 * pipeline Vert.x built for a loopback connection ({@link PipelineSelfTest}), and a pipeline that is
 * not as expected fails the start with a message naming the Vert.x version, instead of every
 * connection being closed silently; a connection that still meets one is closed with that message
 * logged ({@link ConnectionGuard}).
 */
public final class VertxInternals {
  /** The name of Vert.x's HTTP/1.x request decoder in a connection's pipeline. */
  static final String DECODER = "httpDecoder";
  /** The name of Vert.x's connection handler in a connection's pipeline. */
  static final String HANDLER = "handler";
  /** The Vert.x version this coordinator was built and tested with. */
  static final String TESTED_WITH = "5.0.7";

  private VertxInternals() {}

  /** The Netty event loops of {@code vertx}. */
  public static EventLoopGroup eventLoopGroup(Vertx vertx) {
    return ((VertxInternal) vertx).nettyEventLoopGroup();
  }

  /** The running Vert.x's version, from its jar ("unknown" where the jar does not say). */
  public static String version() {
    try (InputStream in = Vertx.class.getClassLoader().getResourceAsStream("META-INF/vertx/vertx-version.txt")) {
      return in == null ? "unknown" : new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
    } catch (IOException e) {
      return "unknown";
    }
  }

  /**
   * Throws when {@code names} (a connection's pipeline, in order) lacks the decoder or the handler
   * the guard replaces and precedes: the message names the Vert.x version, the pipeline and what was
   * expected.
   */
  public static void checkPipeline(List<String> names, String vertxVersion) {
    if (!names.contains(DECODER) || !names.contains(HANDLER)) {
      throw new IllegalStateException("Vert.x " + vertxVersion + " builds the HTTP/1.x pipeline " + names
          + ", without handlers named '" + DECODER + "' and '" + HANDLER + "' (as Vert.x " + TESTED_WITH
          + " names them): the coordinator's connection guard cannot install its strict decoder and gate, "
          + "and would close every connection; run it with Vert.x " + TESTED_WITH + " or update "
          + VertxInternals.class.getName());
    }
  }

  /**
   * Puts the strict decoder in place of Vert.x's and {@code gate} before Vert.x's handler; false
   * (and nothing changed) when the pipeline does not have them.
   */
  static boolean install(ChannelPipeline p, HttpServerOptions options, ChannelHandler gate, String gateName) {
    if (p.get(DECODER) == null || p.get(HANDLER) == null) {
      return false;
    }
    p.replace(DECODER, DECODER, new StrictRequestDecoder(options));
    p.addBefore(HANDLER, gateName, gate);
    return true;
  }

  /**
   * Vert.x's request decoder, except that a request with both Content-Length and Transfer-Encoding
   * (the request-smuggling shape) is marked failed ({@link LengthAndTransferEncoding}) instead of
   * being read as chunked; the {@link ConnectionGuard} answers it with 400 and closes the connection
   * (RFC 9112, section 6.1).
   */
  static final class StrictRequestDecoder extends VertxHttpRequestDecoder {
    StrictRequestDecoder(HttpServerOptions options) {
      super(options);
    }

    @Override
    protected void handleTransferEncodingChunkedWithContentLength(HttpMessage message) {
      super.handleTransferEncodingChunkedWithContentLength(message);
      message.setDecoderResult(DecoderResult.failure(new LengthAndTransferEncoding()));
    }
  }
}
