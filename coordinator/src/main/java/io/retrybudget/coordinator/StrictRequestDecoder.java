package io.retrybudget.coordinator;

import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.HttpMessage;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.impl.VertxHttpRequestDecoder;

/**
 * Vert.x's request decoder, except that a request with both Content-Length and Transfer-Encoding
 * (the request-smuggling shape) is marked failed instead of being read as chunked; the
 * {@link ConnectionGuard} answers it with 400 and closes the connection (RFC 9112, section 6.1).
 */
final class StrictRequestDecoder extends VertxHttpRequestDecoder {

  /** The mark on such a request. */
  static final class LengthAndTransferEncoding extends RuntimeException {
    LengthAndTransferEncoding() {
      super("Content-Length and Transfer-Encoding together", null, false, false);
    }
  }

  StrictRequestDecoder(HttpServerOptions options) {
    super(options);
  }

  @Override
  protected void handleTransferEncodingChunkedWithContentLength(HttpMessage message) {
    super.handleTransferEncodingChunkedWithContentLength(message);
    message.setDecoderResult(DecoderResult.failure(new LengthAndTransferEncoding()));
  }
}
