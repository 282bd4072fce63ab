package io.retrybudget.coordinator.http;

/**
 * The mark the strict request decoder ({@link VertxInternals}) puts on a request with both
 * Content-Length and Transfer-Encoding (the request-smuggling shape): the {@link ConnectionGuard}
 * answers it with 400 and closes the connection (RFC 9112, section 6.1).
 */
final class LengthAndTransferEncoding extends RuntimeException {
  LengthAndTransferEncoding() {
    super("Content-Length and Transfer-Encoding together", null, false, false);
  }
}
