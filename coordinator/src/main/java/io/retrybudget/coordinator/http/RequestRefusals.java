package io.retrybudget.coordinator.http;

import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import java.util.List;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Pattern;

/**
 * Which requests Vert.x should never see, decided from the decoded request line and headers alone
 * (pure): unknown methods (501), HTTP versions but 1.1 and 1.0 (505), undecodable request lines or
 * headers (400, 414, 431), Content-Length with Transfer-Encoding and any Transfer-Encoding but
 * exactly chunked (400, then close), a missing, doubled or malformed Host (400), and the
 * asterisk-form (204 to {@code OPTIONS *}, else 400).
 */
public final class RequestRefusals {
  private static final Logger LOG = Logger.getLogger(ConnectionGuard.class.getName());
  /** Standard methods (RFC 9110 section 9 and RFC 5789); anything else is 501 here. */
  static final Set<String> KNOWN_METHODS = Set.of("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS",
      "TRACE", "PATCH");
  /** What OPTIONS * answers: every method some path here serves. */
  public static final String SERVER_METHODS = "GET, HEAD, PUT, POST, DELETE, OPTIONS";
  /** reg-name or IPv4 (RFC 3986 characters), or an IPv6 literal in brackets; an optional port. */
  private static final Pattern HOST_VALUE = Pattern.compile(
      "(?:[A-Za-z0-9._~!$&'()*+,;=%-]*|\\[[0-9A-Fa-f:.]+])(?::[0-9]{0,5})?");

  private RequestRefusals() {}

  /** GET or HEAD of /health/live or /health/ready: what a reserve connection may ask. */
  static boolean isProbe(HttpRequest req) {
    String method = req.method().name();
    String uri = req.uri();
    int q = uri.indexOf('?');
    String path = q < 0 ? uri : uri.substring(0, q);
    return (method.equals("GET") || method.equals("HEAD")) && (path.equals("/health/live") || path.equals("/health/ready"));
  }

  /** What a reserve connection's request that is no health probe gets. */
  static Refusal notAProbe() {
    return new Refusal(HttpResponseStatus.SERVICE_UNAVAILABLE, null, "at the connection cap "
        + "(COORDINATOR_MAX_CONNECTIONS): only /health/live and /health/ready are answered now; retry", false);
  }

  /** The answer to {@code req} here, before Vert.x; null when Vert.x is to have it. */
  static Refusal refusal(HttpRequest req) {
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
      List<String> te = headers.getAll(HttpHeaderNames.TRANSFER_ENCODING);
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
    List<String> hosts = headers.getAll(HttpHeaderNames.HOST);
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
}
